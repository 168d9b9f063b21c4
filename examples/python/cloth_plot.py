#!/usr/bin/env python3
"""A cloth stepped from Python and plotted with matplotlib.

A 1 m x 1 m cotton-like sheet (weft's default cloth material: 0.2 kg/m², E2 = 30 N/m) pinned at
its two top corners falls onto a sphere of radius 0.25 m; after 1 s the sphere is lifted by 0.2 m
between frames (a collider pose set from Python: no recapture), and the sheet is carried up.
Writes cloth_plot.png: the sheet's vertices seen from the side at four times, and the height of
its lowest vertex over time.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/cloth_plot.py [--device cpu] [--out f.png]
"""
import argparse

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import weft  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="cloth_plot.png")
    ap.add_argument("--frames", type=int, default=120)
    a = ap.parse_args()

    cloth = weft.Cloth.grid(device=a.device, name="sheet", resolution=[24, 24], size=[1.0, 1.0],
                            center=[0, 1.0, 0], integrator="xpbd", substeps=16)
    cloth.pin("top-left")
    cloth.pin("top-right")
    sphere = cloth.add_collider(type="sphere", name="ball", center=[0, 0.6, 0.1], radius=0.25)
    cloth.add_collider(type="plane", name="ground")

    snapshots, lowest = {}, []
    for f in range(1, a.frames + 1):
        # A pose moves the collider's pivot (default: the origin) to `position`: the ball as
        # given is the pose at rest, so these are displacements from where it was created.
        if f == a.frames // 2:  # lift the ball by 0.2 m over the next 0.25 s
            cloth.set_collider_pose(sphere, time=(f - 1) / 60, position=[0, 0, 0],
                                    velocity=[0, 0.8, 0])
        if f == a.frames // 2 + 15:  # and hold it there
            cloth.set_collider_pose(sphere, time=(f - 1) / 60, position=[0, 0.2, 0])
        cloth.step(1)
        pos, _ = cloth.download()  # waits for the frame; (n, 4): xyz + inverse mass
        lowest.append(pos[:, 1].min())
        if f in (1, a.frames // 4, a.frames // 2, a.frames):
            snapshots[f] = pos.copy()

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
    for f, pos in snapshots.items():
        ax0.scatter(pos[:, 0], pos[:, 1], s=2, label=f"t = {f / 60:.2f} s")
    ax0.set_xlabel("x (m)")
    ax0.set_ylabel("y (m)")
    ax0.set_aspect("equal")
    ax0.legend(fontsize=8)
    t = np.arange(1, a.frames + 1) / 60
    ax1.plot(t, lowest)
    ax1.axvline(a.frames // 2 / 60, color="grey", ls=":", label="ball lifted")
    ax1.set_xlabel("t (s)")
    ax1.set_ylabel("lowest vertex y (m)")
    ax1.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"{a.out}: {cloth.count} vertices, {a.frames} frames on {a.device}; "
          f"lowest vertex {lowest[-1]:.3f} m at the end")


if __name__ == "__main__":
    main()
