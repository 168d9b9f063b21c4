"""Devices, streams, events and errors: the objects map 1:1 onto the C API's handles, and
failures raise weft.Error carrying wf_last_error()'s text."""
import pytest

import weft


def test_devices_listed_and_found_by_name(cpu):
    names = [d.name for d in weft.devices()]
    assert "cpu:0" in names
    assert weft.device("cpu") == cpu and str(cpu) == "cpu:0" and not cpu.is_cuda
    assert weft.Device("cpu:0") == cpu and hash(weft.Device("cpu:0")) == hash(cpu)
    weft.cpu_devices_ensure(2)
    assert weft.device("cpu:1").ordinal == 1


def test_unknown_device_raises_with_the_c_message():
    with pytest.raises(weft.Error) as e:
        weft.device("cuda:7")
    assert e.value.status == weft._weft.ERR_DEVICE and e.value.status_name == "WF_ERR_DEVICE"
    # the text is the C layer's, which lists the devices that exist
    assert str(e.value) == weft.last_error()
    assert "no device 'cuda:7'" in str(e.value) and "cpu:0" in str(e.value)


def test_streams_and_events(cpu):
    s = weft.Stream(cpu)
    assert s.device == cpu and s.native is None  # CPU streams have no cudaStream_t
    e0, e1 = weft.Event(cpu, timing=True), weft.Event(cpu, timing=True)
    b = weft.Buffer(1 << 20, "uint8", device=cpu, stream=s)
    e0.record(s)
    b.fill_bytes(7, stream=s)
    e1.record(s)
    e1.synchronize()
    assert e1.query() and s.query()
    assert e0.elapsed_ms(e1) >= 0.0
    other = weft.Stream(cpu)
    other.wait_event(e1)
    other.wait_stream(s)
    other.synchronize()
    assert int(b.download()[-1]) == 7


def test_bad_arguments_raise_python_errors(cpu):
    with pytest.raises(TypeError):
        weft.Buffer(4, "complex64", device=cpu)
    with pytest.raises(TypeError):
        weft.Stream(3.5)
    with pytest.raises(weft.Error) as e:
        weft.Buffer(4, device=cpu).upload(b"x" * 32)  # past the end: the C layer refuses
    assert "outside" in str(e.value) or "range" in str(e.value)


def test_pushed_stream_is_the_current_one(cpu):
    s = weft.Stream(cpu)
    s.push()
    try:
        assert cpu.stream == s
        b = weft.Buffer(8, device=cpu)  # ordered on the current stream: s
        b.fill_bytes(0)
    finally:
        s.pop()
    assert cpu.stream != s
    assert not b.download().any()
