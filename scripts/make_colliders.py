#!/usr/bin/env python3
"""Writes the collider meshes (Wavefront OBJ) of two bundled scenes.

hopper.obj (scenes/hopper_discharge.json): a conical hopper, an open surface of revolution about
the y axis (a shell: the scene gives it a thickness): a cylinder of radius 0.3 m from y = 1.3 m
down to 0.9 m, then a cone narrowing to an outlet of radius 0.08 m at y = 0.55 m (half-angle
32 degrees from the vertical), open at the top and at the outlet, `segments` around.

table.obj (scenes/cloth_table.json): a table as a closed solid, five disjoint boxes (a top of
1.0 x 0.05 x 0.7 m whose upper face is at y = 0.775 m, and four 5 cm square legs from the floor to
the top's underside), each box's triangles counter-clockwise seen from outside.

    python3 scripts/make_colliders.py            # both, into assets/meshes/
    python3 scripts/make_colliders.py --segments 64 --dir /tmp
"""
import argparse
import math
import os


def revolve(profile, segments):
    """Vertices and triangles of the surface swept by profile [(radius, y)] about the y axis."""
    verts, tris = [], []
    for r, y in profile:
        for j in range(segments):
            t = 2.0 * math.pi * j / segments
            verts.append((r * math.cos(t), y, r * math.sin(t)))
    for i in range(len(profile) - 1):
        a0, b0 = i * segments, (i + 1) * segments
        for j in range(segments):
            k = (j + 1) % segments
            tris.append((a0 + j, b0 + j, b0 + k))
            tris.append((a0 + j, b0 + k, a0 + k))
    return verts, tris


def box(center, half, verts, tris):
    """Appends an axis-aligned box: 8 corners, 12 triangles wound outwards."""
    cx, cy, cz = center
    hx, hy, hz = half
    base = len(verts)
    for i in range(8):
        verts.append((cx + (hx if i & 1 else -hx), cy + (hy if i & 2 else -hy),
                      cz + (hz if i & 4 else -hz)))
    faces = [(0, 2, 6, 4), (1, 5, 7, 3), (0, 4, 5, 1), (2, 3, 7, 6), (0, 1, 3, 2), (4, 6, 7, 5)]
    for q in faces:
        for tri in ((q[0], q[1], q[2]), (q[0], q[2], q[3])):
            p = [verts[base + v] for v in tri]
            u = [p[1][k] - p[0][k] for k in range(3)]
            w = [p[2][k] - p[0][k] for k in range(3)]
            n = (u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0])
            out = [sum(pp[k] for pp in p) / 3.0 - center[k] for k in range(3)]
            if sum(n[k] * out[k] for k in range(3)) < 0.0:
                tri = (tri[0], tri[2], tri[1])
            tris.append(tuple(base + v for v in tri))


def write_obj(path, comment, verts, tris):
    with open(path, "w") as f:
        f.write("# %s\n# written by scripts/make_colliders.py\n" % comment)
        for v in verts:
            f.write("v %.6f %.6f %.6f\n" % v)
        for t in tris:
            f.write("f %d %d %d\n" % (t[0] + 1, t[1] + 1, t[2] + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--segments", type=int, default=48)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "assets",
                                                  "meshes"))
    a = ap.parse_args()
    v, t = revolve([(0.08, 0.55), (0.3, 0.9), (0.3, 1.3)], a.segments)
    write_obj(os.path.join(a.dir, "hopper.obj"),
              "conical hopper: outlet r 0.08 m at y 0.55, cone to r 0.3 at y 0.9, wall to 1.3",
              v, t)
    v, t = [], []
    box((0.0, 0.75, 0.0), (0.5, 0.025, 0.35), v, t)
    for sx in (-1, 1):
        for sz in (-1, 1):
            box((0.44 * sx, 0.3625, 0.29 * sz), (0.025, 0.3625, 0.025), v, t)
    write_obj(os.path.join(a.dir, "table.obj"),
              "table: top 1.0 x 0.05 x 0.7 m (upper face y 0.775), four legs 0.05 m square", v, t)


if __name__ == "__main__":
    main()
