"""weft: physics simulation on CPU and CUDA devices, from Python.

A thin layer over libweft's public C API (the extension ``weft._weft``); docs/python.md is the
guide. In short::

    import weft, numpy as np
    dev = weft.device("cpu:0")                  # weft.devices() lists them
    buf = weft.Buffer((1024, 4), "float32", device=dev, zero=True)
    a = np.asarray(buf)                         # zero-copy view (waits for weft's writes)
    t = torch.from_dlpack(buf)                  # zero-copy tensor (DLPack)
    b = weft.Buffer.from_array(t)               # zero-copy the other way

    scene = weft.Scene.load("scenes/flag.json")
    world = weft.World(scene, device="cpu")
    world.step(60)
    pos, vel = world.download(0)

    s = weft.Stream(dev)
    with weft.capture(s) as g:                  # record work queued on s
        cloth.step_substeps(16)
    g.launch(count=100)                         # replay it

Every failure raises weft.Error whose text is wf_last_error()'s (scene files: every message of
the validation, one per line).
"""
from ._weft import (  # noqa: F401
    Buffer,
    Cloth,
    Device,
    Error,
    Event,
    Graph,
    Particles,
    Scene,
    Stream,
    World,
    capture_begin,
    capture_end,
    cpu_devices_ensure,
    device,
    devices,
    init,
    last_error,
    runtime_info,
    synchronize,
)
from .capture import capture  # noqa: F401

__all__ = [
    "Buffer", "Cloth", "Device", "Error", "Event", "Graph", "Particles", "Scene", "Stream",
    "World", "capture", "cpu_devices_ensure", "device", "devices", "from_array", "init",
    "last_error", "runtime_info", "synchronize", "validate",
]


def from_array(obj, device=None):
    """A weft.Buffer over obj's memory without a copy (DLPack, the CUDA array interface or the
    NumPy array interface, in that order). The Buffer keeps obj alive."""
    return Buffer.from_array(obj, device=device)


def validate(path, overrides=None):
    """Loads and validates a scene file like `weft validate`; returns the weft.Scene, or raises
    weft.Error whose text holds every message, one per line."""
    return Scene.load(path, overrides=overrides)
