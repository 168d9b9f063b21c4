"""Graphs and the capture context on the CPU backend (which records the queued commands and
replays them, as CUDA graphs do): a captured frame replayed N times gives bitwise the state of N
eager frames; operations that cannot be captured raise with the C layer's advice."""
import numpy as np
import pytest

import weft


def grid_cloth(cpu, stream=None):
    c = weft.Cloth.grid(device=cpu, stream=stream, resolution=[8, 8],
                        name="banner", wind=[3.0, 0.0, 0.0])
    c.pin("top")
    return c


def test_captured_substeps_replay_bitwise_like_eager(cpu):
    s = weft.Stream(cpu)
    captured = grid_cloth(cpu, s)
    with weft.capture(s) as g:
        captured.step_substeps(16)
    assert g.node_count >= 1 and g.graph.stream == s
    g.launch(count=30)
    eager = grid_cloth(cpu, weft.Stream(cpu))
    for _ in range(30):
        eager.step_substeps(16)
    frames = grid_cloth(cpu)
    frames.step(30)  # the solver's own captured frame (wf_cloth_step_frames)
    p_cap, v_cap = captured.download()
    p_eag, v_eag = eager.download()
    p_frm, _ = frames.download()
    # bitwise: the same kernels in the same order (weft/cloth.h's determinism promise)
    assert np.array_equal(p_cap, p_eag) and np.array_equal(v_cap, v_eag)
    assert np.array_equal(p_cap, p_frm)
    assert p_cap[-1, 1] < 0.9  # it fell: the replays did run (the grid starts at y = 1)


def test_capture_records_copies_and_replays_them(cpu):
    s = weft.Stream(cpu)
    a = weft.Buffer((256,), "float32", device=cpu)
    a.upload(np.arange(256, dtype=np.float32))
    b = weft.Buffer((256,), "float32", device=cpu, zero=True)
    with weft.capture(s) as g:
        b.copy_from(a, stream=s)
    assert not b.download().any()  # recorded, not run
    g.launch()
    assert np.array_equal(b.download(), np.arange(256, dtype=np.float32))


@pytest.mark.parametrize("what", ["download", "asarray", "synchronize", "upload", "pinned"])
def test_illegal_operations_inside_capture_raise_with_advice(cpu, what):
    s = weft.Stream(cpu)
    b = weft.Buffer((64,), "float32", device=cpu, zero=True)
    with pytest.raises(weft.Error) as e:
        with weft.capture(s):
            b.fill_bytes(0, stream=s)
            {"download": b.download, "asarray": lambda: np.asarray(b),
             "synchronize": s.synchronize,
             "upload": lambda: b.upload(np.ones(64, np.float32), stream=s),  # pageable source
             "pinned": lambda: weft.Buffer(64, device=cpu, pinned=True)}[what]()
    assert e.value.status_name == "WF_ERR_CAPTURE"
    advice = {"download": "WF_BUFFER_PINNED", "asarray": "end the capture first",
              "synchronize": "end the capture first", "upload": "WF_BUFFER_PINNED buffer and use",
              "pinned": "before wf_capture_begin"}[what]
    assert "captur" in str(e.value) and advice in str(e.value)  # what to do instead, from C
    assert not s.capturing  # the context ended the capture on the way out
    s.synchronize()  # and the stream works again


def test_graph_before_end_is_an_error(cpu):
    s = weft.Stream(cpu)
    with weft.capture(s) as g:
        with pytest.raises(weft.Error):
            g.launch()


def test_particle_substeps_captured_after_eager_steps(cpu):
    # wf_particles_step_substeps inside a capture skips the host's refit of the grid box (which
    # would query an event: not capturable); results do not depend on the box, so the replay is
    # bitwise the eager run's, with steps before and after the capture.
    def make(stream):
        p = weft.Particles(device=cpu, stream=stream, substeps=8)
        p.emit(half_extents=[0.1, 0.1, 0.1], velocity=[0, -1, 0])
        p.add_collider(type="plane")
        p.step_substeps(1)
        return p

    s = weft.Stream(cpu)
    cap = make(s)
    with weft.capture(s) as g:
        for _ in range(8):
            cap.step_substeps(1)
    g.launch(count=20)
    cap.step_substeps(3)
    eager = make(weft.Stream(cpu))
    for _ in range(20 * 8 + 3):
        eager.step_substeps(1)
    (p1, v1), (p2, v2) = cap.download(), eager.download()
    assert np.array_equal(p1, p2) and np.array_equal(v1, v2)
    assert cap.stats()["substeps"] == 1 + 160 + 3


def test_capture_forks_and_joins_another_stream(cpu):
    # wf_stream_wait_stream forks a second stream into the capture and joins it back: the graph
    # holds both copies, in order (b after a's fill, c after b).
    s, side = weft.Stream(cpu), weft.Stream(cpu)
    a = weft.Buffer((1024,), "float32", device=cpu)
    a.upload(np.full(1024, 5.0, np.float32))
    b = weft.Buffer((1024,), "float32", device=cpu, zero=True)
    c = weft.Buffer((1024,), "float32", device=cpu, zero=True)
    with weft.capture(s) as g:
        b.copy_from(a, stream=s)
        side.wait_stream(s)  # fork
        c.copy_from(b, stream=side)
        s.wait_stream(side)  # join
    assert g.node_count == 2
    g.launch()
    s.synchronize()
    assert float(c.download().min()) == 5.0


def test_unjoined_fork_fails_the_capture_with_advice(cpu):
    s, side = weft.Stream(cpu), weft.Stream(cpu)
    b = weft.Buffer((16,), "float32", device=cpu)
    with pytest.raises(weft.Error) as e:
        with weft.capture(s):
            b.fill_bytes(0, stream=s)
            side.wait_stream(s)
            b.fill_bytes(1, stream=side)  # never joined back
    assert e.value.status_name == "WF_ERR_CAPTURE"
