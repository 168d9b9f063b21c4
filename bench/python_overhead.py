#!/usr/bin/env python3
"""What stepping from Python costs over stepping from C, in microseconds per frame.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--device cpu|cuda]
       [--frames 2000] [--repeats 5]

Three ways to run the same frames of a small cloth (16 x 16, 16 substeps), each timed from the
first enqueue to the end of the device's work (best of --repeats):
  graph   a captured frame (weft.capture of step_substeps) replayed: Graph.launch() once a frame
          from a Python loop, against Graph.launch(count=N), whose loop over wf_graph_launch runs
          in C;
  solver  Cloth.step() once a frame from Python against Cloth.step(N) (wf_cloth_step_frames'
          own loop in C).
The difference is the Python side's cost per frame: argument parsing, the call, the GIL
release around the C call. Where the device's work per frame is longer than the enqueue, the
enqueues hide behind it and the difference shrinks to noise; the "enqueue only" lines time the
loops without waiting for the device, which shows the Python cost directly.
"""
import argparse
import time

import weft


def best(fn, repeats):
    out = []
    for _ in range(repeats):
        out.append(fn())
    return min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--frames", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    dev = weft.device(a.device)
    n = a.frames
    s = weft.Stream(dev)
    cloth = weft.Cloth.grid(device=dev, stream=s, resolution=[16, 16], name="bench")
    cloth.pin("top")
    with weft.capture(s) as g:
        cloth.step_substeps(16)

    def graph_py(wait=True):
        t = time.perf_counter()
        for _ in range(n):
            g.launch()
        t_enq = time.perf_counter() - t
        s.synchronize()
        return (time.perf_counter() - t if wait else t_enq) / n * 1e6

    def graph_c(wait=True):
        t = time.perf_counter()
        g.launch(count=n)
        t_enq = time.perf_counter() - t
        s.synchronize()
        return (time.perf_counter() - t if wait else t_enq) / n * 1e6

    solver = weft.Cloth.grid(device=dev, resolution=[16, 16], name="bench2")
    solver.pin("top")
    solver.step(1)  # captures the solver's frame graph once

    def solver_py(wait=True):
        t = time.perf_counter()
        for _ in range(n):
            solver.step()
        t_enq = time.perf_counter() - t
        solver.stream.synchronize()
        return (time.perf_counter() - t if wait else t_enq) / n * 1e6

    def solver_c(wait=True):
        t = time.perf_counter()
        solver.step(n)
        t_enq = time.perf_counter() - t
        solver.stream.synchronize()
        return (time.perf_counter() - t if wait else t_enq) / n * 1e6

    print(f"device {dev}, {n} frames of a 16x16 cloth (16 substeps), best of {a.repeats}")
    for name, py, c in (("graph", graph_py, graph_c), ("solver", solver_py, solver_c)):
        tp, tc = best(py, a.repeats), best(c, a.repeats)
        ep = best(lambda: py(False), a.repeats)
        ec = best(lambda: c(False), a.repeats)
        print(f"{name:7s} end to end  python {tp:8.2f} us/frame   C {tc:8.2f} us/frame   "
              f"python - C {tp - tc:+7.2f} us")
        print(f"{name:7s} enqueue only python {ep:8.2f} us/frame   C {ec:8.2f} us/frame   "
              f"python - C {ep - ec:+7.2f} us")


if __name__ == "__main__":
    main()
