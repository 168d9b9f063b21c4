#!/usr/bin/env python3
"""Writes a round tablecloth mesh (Wavefront OBJ) for weft's scenes.

The disc lies in the xz-plane (normal +y), centred at the origin. It is made of `rings` concentric
rings at an even spacing h = radius / rings; ring k holds 6k vertices, so the vertices are spread
evenly over the area (a hexagonal lattice bent into circles) and every edge is between h and 1.75 h
long (the longest where two rings' vertices are out of step). Such a mesh has no preferred direction, so a drape of it folds where the body under it makes it fold, not along grid
lines. Ring k's vertices sit at angles 2*pi*j / (6k), every ring starting on the +x axis.

    python3 scripts/make_disc.py        # assets/meshes/tablecloth_round.obj (showcase.json)
    python3 scripts/make_disc.py --radius 0.5 --rings 8 --out disc.obj
"""
import argparse
import math


def disc(radius, rings):
    """Vertices [(x, y, z)] and triangles [(a, b, c)] (0-based, normal +y) of the disc."""
    verts = [(0.0, 0.0, 0.0)]
    start = [0]  # index of each ring's first vertex; ring 0 is the centre alone
    for k in range(1, rings + 1):
        start.append(len(verts))
        r = radius * k / rings
        n = 6 * k
        for j in range(n):
            t = 2.0 * math.pi * j / n
            verts.append((r * math.cos(t), 0.0, r * math.sin(t)))
    tris = []
    for k in range(1, rings + 1):
        n_in, n_out = (1 if k == 1 else 6 * (k - 1)), 6 * k
        inner = lambda i: start[k - 1] + (i % n_in)
        outer = lambda j: start[k] + (j % n_out)
        i = n_in if k == 1 else 0  # the centre has no next vertex: ring 1 is a fan
        j = 0
        # zip the two rings by angle: always close the triangle whose new vertex comes first
        while i < n_in or j < n_out:
            next_in = (i + 1) / n_in if i < n_in else 2.0
            next_out = (j + 1) / n_out if j < n_out else 2.0
            if next_out <= next_in:
                tris.append((inner(i), outer(j), outer(j + 1)))
                j += 1
            else:
                tris.append((inner(i), outer(j), inner(i + 1)))
                i += 1
    # increasing angle in the xz-plane turns about -y: reverse each triangle for a +y normal
    return verts, [(a, c, b) for a, b, c in tris]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--radius", type=float, default=0.85, help="disc radius, m (default 0.85)")
    ap.add_argument("--rings", type=int, default=20, help="rings around the centre (default 20)")
    ap.add_argument("--out", default="assets/meshes/tablecloth_round.obj", help="OBJ file to write")
    a = ap.parse_args()
    if a.radius <= 0 or a.rings < 1:
        ap.error("--radius must be > 0 and --rings >= 1")
    verts, tris = disc(a.radius, a.rings)
    with open(a.out, "w") as f:
        f.write("# %s: a round tablecloth of radius %g m in the xz-plane (normal +y), written by\n"
                "# scripts/make_disc.py --radius %g --rings %d: %d rings of 6k vertices around a\n"
                "# centre vertex, spacing %.4g m: %d vertices, %d triangles.\n"
                % (a.out.split("/")[-1], a.radius, a.radius, a.rings, a.rings,
                   a.radius / a.rings, len(verts), len(tris)))
        f.write("o tablecloth_round\n")
        for x, y, z in verts:
            f.write("v %.6f %.6f %.6f\n" % (x + 0.0, y, z + 0.0))
        for t in tris:
            f.write("f %d %d %d\n" % (t[0] + 1, t[1] + 1, t[2] + 1))


if __name__ == "__main__":
    main()
