"""The capture context: ``with weft.capture(stream) as g: ...`` then ``g.launch()``.

Work queued on ``stream`` (and on streams forked from it with ``Stream.wait_stream``, joined back
before the block ends) inside the block is recorded instead of run. On a wrapped external stream
(``Stream.wrap``, e.g. PyTorch's current stream) the other library's kernels on that stream are
recorded into the same graph. Operations that cannot be captured (synchronisation, host reads,
pageable copies) raise weft.Error with the C layer's advice instead of corrupting the capture.
If the block raises, the capture is ended and its graph discarded before the exception goes on.
"""
from . import _weft


class capture:
    """Context manager over wf_capture_begin / wf_capture_end. After the block, ``graph`` is the
    weft.Graph; ``launch``, ``node_count`` and ``keep`` go to it."""

    def __init__(self, stream, keep=()):
        self.stream = stream
        self.graph = None
        self._keep = list(keep)

    def __enter__(self):
        _weft.capture_begin(self.stream)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            try:
                _weft.capture_end(self.stream).close()
            except _weft.Error:
                pass  # the capture was already invalid; the original exception says why
            return False
        self.graph = _weft.capture_end(self.stream)
        for obj in self._keep:
            self.graph.keep(obj)
        return False

    def _g(self):
        if self.graph is None:
            raise _weft.Error("weft.capture: the graph exists once the with-block has ended")
        return self.graph

    def launch(self, stream=None, count=1):
        """Replays the captured work count times, ordered on stream (None: the origin)."""
        self._g().launch(stream, count)

    def keep(self, obj):
        """Holds obj (e.g. a Buffer over a tensor the graph reads) while the graph lives."""
        self._g().keep(obj)

    @property
    def node_count(self):
        return self._g().node_count

    def close(self):
        if self.graph is not None:
            self.graph.close()
