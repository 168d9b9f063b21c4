"""CUDA: zero-copy with PyTorch (and CuPy where installed), stream ordering through the CUDA
array interface and DLPack, joint capture of weft substeps and torch ops into one graph, and the
pitfalls the issue names. Skipped without a CUDA device; the GPU machine runs them (the CPU
machine where this was written has none, so these were compiled and linted, not run)."""
import gc
import weakref

import numpy as np
import pytest

import weft

from conftest import cuda_only

pytestmark = cuda_only
torch = pytest.importorskip("torch")


@pytest.fixture
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("weft sees a CUDA device but this torch has no CUDA")
    return weft.device("cuda:0")


def test_cuda_buffer_to_torch_and_back_same_address(gpu):
    b = weft.Buffer((1024, 4), "float32", device=gpu, zero=True)
    t = torch.from_dlpack(b)
    assert t.is_cuda and t.data_ptr() == b.ptr and t.shape == (1024, 4)
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"][0] == b.ptr and cai["stream"] not in (None, 0)
    src = torch.arange(4096, dtype=torch.float32, device="cuda").reshape(1024, 4)
    w = weft.Buffer.from_array(src)
    assert w.ptr == src.data_ptr() and w.device == gpu
    assert np.array_equal(w.download(), src.cpu().numpy())
    with pytest.raises(TypeError, match="device memory"):
        np.asarray(b)  # not a silent object array


def test_cuda_lifetimes(gpu):
    b = weft.Buffer((1 << 20,), "float32", device=gpu, zero=True)
    ref = weakref.ref(b)
    t = torch.from_dlpack(b)
    del b
    gc.collect()
    assert ref() is not None
    t += 1
    torch.cuda.synchronize()
    assert float(t.sum()) == float(1 << 20)
    del t
    gc.collect()
    assert ref() is None
    src = torch.ones(1 << 20, device="cuda")
    tref = weakref.ref(src)
    w = weft.from_array(src)
    del src
    gc.collect()
    assert tref() is not None and float(w.download().sum()) == float(1 << 20)
    del w
    gc.collect()
    assert tref() is None


def test_torch_reads_after_weft_write_on_another_stream(gpu):
    # weft copies 256 MB on a stream of its own; torch reads on its current stream right away.
    # DLPack hands torch's stream to __dlpack__, which makes it wait for weft's copy.
    n = 64 << 20
    src = weft.Buffer((n,), "float32", device=gpu)
    src.upload(np.full(n, 3.0, np.float32))
    s = weft.Stream(gpu)
    dst = weft.Buffer((n,), "float32", device=gpu, zero=True, stream=s)
    dst.copy_from(src, stream=s)
    t = torch.from_dlpack(dst)
    assert float(t[-1]) == 3.0 and float(t.min()) == 3.0


def test_cupy_roundtrip(gpu):
    cp = pytest.importorskip("cupy")
    b = weft.Buffer((256,), "float32", device=gpu, zero=True)
    a = cp.asarray(b)  # __cuda_array_interface__
    assert a.data.ptr == b.ptr
    a += 2
    cp.cuda.runtime.deviceSynchronize()
    assert b.download().sum() == 512
    c = cp.arange(10, dtype=cp.float64)
    w = weft.from_array(c)
    assert w.ptr == c.data.ptr


def _frame(cloth, ws, posb, pos, trail, substeps):
    """One frame: weft's substeps and a copy into torch memory on the wrapped stream, then torch
    ops on the same stream (torch's current one) reading what weft wrote."""
    cloth.step_substeps(substeps)
    cloth.copy_positions(posb, stream=ws)
    trail.mul_(0.9).add_(pos[:, 1])


def _joint_setup(gpu, torch_stream):
    from weft.torch_interop import weft_stream

    with torch.cuda.stream(torch_stream):
        ws = weft_stream()
        cloth = weft.Cloth.grid(device=gpu, stream=ws, resolution=[16, 16], wind=[3, 0, 0],
                                material={"drag": 1.0}, name="banner")
        cloth.pin("top")
        n = cloth.count
        pos = torch.zeros((n, 4), device="cuda")
        trail = torch.zeros(n, device="cuda")
        posb = weft.from_array(pos)
    return ws, cloth, pos, trail, posb


def test_joint_capture_with_torch_replayed_1000_times_bitwise(gpu):
    frames, substeps = 1000, 16
    s_cap, s_eager = torch.cuda.Stream(), torch.cuda.Stream()
    ws, cloth, pos, trail, posb = _joint_setup(gpu, s_cap)
    with torch.cuda.stream(s_cap):
        with weft.capture(ws, keep=[posb]) as g:
            _frame(cloth, ws, posb, pos, trail, substeps)
        g.launch(count=frames)
    ws2, cloth2, pos2, trail2, posb2 = _joint_setup(gpu, s_eager)
    with torch.cuda.stream(s_eager):
        for _ in range(frames):
            _frame(cloth2, ws2, posb2, pos2, trail2, substeps)
    torch.cuda.synchronize()
    p1, v1 = cloth.download()
    p2, v2 = cloth2.download()
    assert np.array_equal(p1, p2) and np.array_equal(v1, v2)
    assert torch.equal(trail, trail2) and torch.equal(pos, pos2)
    assert float(trail.abs().sum()) > 0  # the torch half ran too


def test_illegal_operations_inside_a_torch_joint_capture_raise(gpu):
    s = torch.cuda.Stream()
    ws, cloth, pos, trail, posb = _joint_setup(gpu, s)
    with torch.cuda.stream(s):
        with pytest.raises(weft.Error) as e:
            with weft.capture(ws):
                cloth.step_substeps(1)
                posb.download()  # a blocking read: would be CUDA error 906 in a raw capture
        assert e.value.status_name == "WF_ERR_CAPTURE" and "capture" in str(e.value)
        assert not ws.capturing
        cloth.step_substeps(1)  # the stream is usable afterwards
    torch.cuda.synchronize()


def test_cross_device_copy_after_upload(gpu):
    if sum(d.is_cuda for d in weft.devices()) < 2:
        pytest.skip("needs two CUDA devices")
    d1 = weft.device("cuda:1")
    n = 16 << 20
    a = weft.Buffer((n,), "float32", device=d1)
    a.upload(np.full(n, 7.0, np.float32))  # then a copy to cuda:0 with no manual wait
    b = weft.Buffer((n,), "float32", device=gpu, zero=True)
    b.copy_from(a)
    assert float(torch.from_dlpack(b).min()) == 7.0
