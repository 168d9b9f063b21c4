"""PyTorch helpers. Importing weft does not import torch; this module does.

``weft_stream(torch_stream=None)`` wraps PyTorch's current CUDA stream (or the one given) as a
weft.Stream, so that weft's work and torch's share one queue and can be captured into one graph
(``weft.capture``); the Stream keeps the torch stream object alive. ``to_torch`` and
``from_torch`` move arrays across without a copy (DLPack)."""
import torch

from . import _weft


def weft_stream(torch_stream=None):
    """A weft.Stream over a torch.cuda.Stream (default: torch.cuda.current_stream())."""
    s = torch_stream if torch_stream is not None else torch.cuda.current_stream()
    if s.cuda_stream == 0:
        raise _weft.Error(
            "weft_stream: torch's current stream is the legacy default stream, which cannot be "
            "captured; run under `with torch.cuda.stream(torch.cuda.Stream()):`")
    return _weft.Stream.wrap(f"cuda:{s.device.index}", s.cuda_stream, owner=s)


def to_torch(buf):
    """A torch tensor over a weft.Buffer's memory (the tensor keeps the buffer alive)."""
    return torch.utils.dlpack.from_dlpack(buf)


def from_torch(tensor):
    """A weft.Buffer over a contiguous tensor's memory (the buffer keeps the tensor alive)."""
    return _weft.Buffer.from_array(tensor)
