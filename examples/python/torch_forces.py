#!/usr/bin/env python3
"""A PyTorch model applying forces to weft particles, both inside one captured graph.

A block of grains (weft's default material: glass-bead-like, radius 5 cm, 1000 kg/m³) falls onto
the ground while a small torch model (a fixed-weight "force field": a pull towards the y axis
plus a swirl about it, 0.5 N/kg and 1 N/kg at 1 m) pushes every grain. Each substep is:

    weft   particles.step_substeps(1)       contacts, gravity, integration (on the stream)
    torch  a = model(pos) ; vel += a * dt   on the same stream, in place on weft's velocities

CUDA: the particles run on PyTorch's stream (wrapped with weft.torch_interop.weft_stream), the
state is seen by torch without a copy (Particles.partition_view + DLPack), and a frame of both
is captured once with torch.cuda.graph (torch's capture, which gives the model's temporaries a
private memory pool; weft's work on the wrapped stream is recorded into the same graph) and
replayed every frame. The script then reruns the frames without the graph and checks that both
give bitwise the same state.
CPU: the same frames eagerly (torch's CPU ops run on the host, so they cannot be captured into a
weft CPU graph): weft's stream is synchronised before torch reads, as docs/python.md explains.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/torch_forces.py [--device cuda|cpu]
"""
import argparse

import numpy as np
import torch

import weft

SUBSTEPS = 32


class ForceField(torch.nn.Module):
    """a(x) = -k_r (x, 0, z) + k_s (-z, 0, x): radial pull to the y axis and a swirl, m/s²."""

    def __init__(self, k_r=0.5, k_s=1.0):
        super().__init__()
        m = torch.tensor([[-k_r, 0.0, -k_s], [0.0, 0.0, 0.0], [k_s, 0.0, -k_r]])
        self.lin = torch.nn.Linear(3, 3, bias=False)
        with torch.no_grad():
            self.lin.weight.copy_(m)  # a(x) = W x

    def forward(self, x):
        return self.lin(x)


def build(device, stream=None):
    ps = weft.Particles(device=device, stream=stream, substeps=SUBSTEPS, name="grains")
    ps.emit(center=[0.5, 0.6, 0], half_extents=[0.15, 0.15, 0.15], radius=0.025, spacing=0.05)
    ps.add_collider(type="plane", name="ground")
    return ps


def substep(ps, model, pos, vel, origin, dt):
    ps.step_substeps(1)
    with torch.no_grad():
        acc = model(pos[:, :3] + origin)  # the view's positions are relative to the origin
        # dynamic grains only: vel.w is the inverse mass (0: kinematic)
        vel[:, :3] += acc * dt * (vel[:, 3:4] > 0)


def run_cuda(frames):
    from weft.torch_interop import weft_stream

    dt = 1 / 60 / SUBSTEPS
    model = ForceField().cuda()
    results = []
    for captured in (True, False):
        ts = torch.cuda.Stream()
        with torch.cuda.stream(ts):
            ws = weft_stream(ts)
            ps = build("cuda:0", ws)
            view = ps.partition_view()
            pos, vel = torch.from_dlpack(view["pos"]), torch.from_dlpack(view["vel"])
            origin = torch.tensor(view["origin"], dtype=torch.float32, device="cuda")
            if captured:
                for _ in range(3):  # warm up torch's kernels and allocator
                    substep(ps, model, pos, vel, origin, dt)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=ts):
                    for _ in range(SUBSTEPS):
                        substep(ps, model, pos, vel, origin, dt)
                for _ in range(frames):
                    g.replay()
            else:
                for _ in range(3 + frames * SUBSTEPS):
                    substep(ps, model, pos, vel, origin, dt)
        torch.cuda.synchronize()
        results.append(ps.download())
    same = all(np.array_equal(a, b) for a, b in zip(results[0], results[1]))
    print(f"captured vs eager: {'bitwise equal' if same else 'DIFFERENT'}")
    return results[0], same


def run_cpu(frames):
    dt = 1 / 60 / SUBSTEPS
    model = ForceField()
    s = weft.Stream("cpu")
    ps = build("cpu", s)
    view = ps.partition_view()
    pos, vel = torch.from_dlpack(view["pos"]), torch.from_dlpack(view["vel"])
    origin = torch.tensor(view["origin"], dtype=torch.float32)
    for _ in range(frames * SUBSTEPS):
        ps.step_substeps(1)
        s.synchronize()  # a CPU stream is a worker thread: torch reads after it is done
        with torch.no_grad():
            vel[:, :3] += model(pos[:, :3] + origin) * dt * (vel[:, 3:4] > 0)
    return ps.download(), True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--frames", type=int, default=60)
    a = ap.parse_args()
    (pos, vel), ok = run_cuda(a.frames) if a.device.startswith("cuda") else run_cpu(a.frames)
    r = np.hypot(pos[:, 0], pos[:, 2])
    # the swirl turns the grains about the y axis: angular momentum about it per unit mass
    lz = np.mean(pos[:, 2] * vel[:, 0] - pos[:, 0] * vel[:, 2])
    print(f"{len(pos)} grains after {a.frames} frames on {a.device}: mean distance to the axis "
          f"{r.mean():.3f} m, lowest y {pos[:, 1].min():.3f} m, mean angular momentum about y "
          f"{lz:+.4f} m²/s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
