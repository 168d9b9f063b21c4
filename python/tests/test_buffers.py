"""Zero-copy arrays: weft buffers seen by NumPy and PyTorch (CPU) without a copy and the other
way round, lifetimes in both directions, and the stream ordering of the C layer kept (an array
read after a weft write sees the write). Sameness of memory is asserted by address equality."""
import gc
import weakref

import numpy as np
import pytest

import weft

torch = pytest.importorskip("torch")


def test_numpy_view_is_the_buffer(cpu):
    b = weft.Buffer((8, 4), "float32", device=cpu, zero=True)
    a = np.asarray(b)
    assert a.__array_interface__["data"][0] == b.ptr
    # NumPy takes the buffer protocol first: a.base is a memoryview of b, which holds b
    assert a.shape == (8, 4) and a.dtype == np.float32 and getattr(a.base, "obj", a.base) is b
    a[3, 2] = 5.0  # writes land in the buffer: download is the C layer's copy
    assert b.download()[3, 2] == 5.0


def test_torch_dlpack_both_ways(cpu):
    b = weft.Buffer((16,), "int32", device=cpu, zero=True)
    t = torch.from_dlpack(b)
    assert t.data_ptr() == b.ptr and t.dtype == torch.int32 and t.shape == (16,)
    assert b.__dlpack_device__() == (1, 0)
    t += 3
    assert b.download().tolist() == [3] * 16
    src = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    w = weft.Buffer.from_array(src)
    assert w.ptr == src.data_ptr() and w.shape == (4, 6) and w.dtype == "float64"
    assert np.array_equal(w.download(), src.numpy())
    back = torch.from_dlpack(w)  # a weft buffer over torch memory, re-exported to torch
    assert back.data_ptr() == src.data_ptr()


def test_numpy_in_without_copy_and_noncontiguous_refused(cpu):
    n = np.arange(12, dtype=np.uint16).reshape(3, 4)
    w = weft.from_array(n)
    assert w.ptr == n.ctypes.data and w.dtype == "uint16"
    ro = np.arange(4.0)
    ro.setflags(write=False)  # NumPy refuses DLPack for it: the array interface is used
    assert weft.from_array(ro).ptr == ro.ctypes.data
    with pytest.raises(ValueError, match="contiguous"):
        weft.from_array(np.arange(20.0)[::2])
    with pytest.raises(ValueError, match="contiguous"):
        weft.from_array(torch.arange(20.0)[::2])


def test_array_keeps_buffer_alive(cpu):
    b = weft.Buffer((1000,), "float32", device=cpu)
    b.upload(np.full(1000, 2.5, np.float32))
    ref = weakref.ref(b)
    a, t = np.asarray(b), torch.from_dlpack(b)
    del b
    gc.collect()
    assert ref() is not None  # the array and the tensor hold it
    assert float(a.sum()) == 2500.0 and float(t.sum()) == 2500.0
    del a
    gc.collect()
    assert ref() is not None  # the tensor still does
    del t
    gc.collect()
    assert ref() is None


def test_buffer_keeps_tensor_and_array_alive(cpu):
    t = torch.ones(256)
    n = np.ones(256)
    tref, nref = weakref.ref(t), weakref.ref(n)
    bt, bn = weft.from_array(t), weft.from_array(n)
    del t, n
    gc.collect()
    assert tref() is not None and nref() is not None
    assert bt.download().sum() == 256 and bn.download().sum() == 256
    del bt, bn
    gc.collect()
    assert tref() is None and nref() is None


def test_reading_after_a_weft_write_waits_for_it(cpu):
    # A CPU stream is a worker thread: the copy below is still running when copy_from returns.
    # 32 MB take milliseconds to copy, so an export that did not wait would see zeros.
    n = 8 << 20
    src = weft.Buffer((n,), "float32", device=cpu)
    src.upload(np.full(n, 1.0, np.float32))
    for export in (np.asarray, torch.from_dlpack, lambda b: np.from_dlpack(b)):
        s = weft.Stream(cpu)
        dst = weft.Buffer((n,), "float32", device=cpu, zero=True, stream=s)
        dst.copy_from(src, stream=s)
        src_again = export(dst)
        assert float(src_again[-1]) == 1.0 and float(src_again[0]) == 1.0


def test_weft_write_into_wrapped_memory_is_seen_by_owner(cpu):
    t = torch.zeros(1 << 22)
    w = weft.from_array(t)
    s = weft.Stream(cpu)
    w.fill_bytes(0, stream=s)
    src = weft.Buffer((1 << 22,), device=cpu)
    src.upload(np.full(1 << 22, 4.0, np.float32))
    w.copy_from(src, stream=s)
    w.synchronize()  # the torch side has no stream protocol on CPU: wait explicitly
    assert float(t[-1]) == 4.0 and float(t[0]) == 4.0


def test_buffer_protocol_is_zero_copy_and_waits(cpu):
    b = weft.Buffer((3, 2), "int16", device=cpu, zero=True)
    m = memoryview(b)
    assert m.format == "h" and m.shape == (3, 2) and m.nbytes == 12
    assert np.frombuffer(b, np.int16).ctypes.data == b.ptr
    n = 8 << 20
    src = weft.Buffer((n,), "float32", device=cpu)
    src.upload(np.full(n, 2.0, np.float32))
    s = weft.Stream(cpu)
    dst = weft.Buffer((n,), "float32", device=cpu, zero=True, stream=s)
    dst.copy_from(src, stream=s)
    assert memoryview(dst).cast("B").cast("f")[n - 1] == 2.0  # waited for the copy


def test_torch_interop_helpers(cpu):
    from weft.torch_interop import from_torch, to_torch

    t = torch.arange(6, dtype=torch.int64)
    b = from_torch(t)
    assert b.ptr == t.data_ptr() and b.dtype == "int64"
    back = to_torch(b)
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)
