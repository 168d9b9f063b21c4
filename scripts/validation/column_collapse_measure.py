#!/usr/bin/env python3
"""Measures one run of scenes/column_collapse.json (see column_collapse.sh).

Usage: column_collapse_measure.py OUT_DIR RELEASE_FRAME FINAL_FRAME GATE_X [PROFILE_CSV LABEL]

Reads the particles' binary PLY files that `weft run` wrote into OUT_DIR at the frame the gate
vanishes and at the last frame, and stats.csv, and prints one CSV row (no header):

  a, beads, L_i, H_i, L_f, H_f, runout, height, x_max, detached, creep, v_max, ke_release,
  ke_final, pe_drop

  a          H_i / L_i, the aspect ratio of the settled column at release
  beads      how many grains the column has
  L_i        m, the column's length along the channel: the gate's inner face (GATE_X; the back
             wall is at x = 0)
  H_i        m, the settled column's height at release: the top of its highest grain
  L_f        m, the deposit's front: the outer edge of the farthest grain of the contiguous
             deposit, the grains touching, directly or through others, the one nearest the back
             wall (so the few grains thrown or rolling ahead of the front do not count)
  H_f        m, the deposit's height: the top of its highest grain
  runout     (L_f - L_i) / L_i
  height     H_f / L_i
  x_max      m, the outer edge of the farthest grain of all, detached ones included
  detached   how many grains are not in the contiguous deposit
  creep      mm, how far L_f moved in the last 0.1 s (frame FINAL - 6 to FINAL): the deposit's
             front is at rest when it is 0 (a grain rolling up to the front or away from it counts)
  v_max      m/s, the fastest bead of the deposit at the last frame
  ke_*       J, kinetic energy at release and at the last frame (stats.csv); pe_drop, J, the fall
             of potential energy between them: ke_final / pe_drop says how close to rest it is

With PROFILE_CSV, appends the deposit's surface to it, one row per grain diameter along x:
  LABEL, a, x / L_i, h / L_i   (h: the top of the highest grain whose centre is in that bin;
                                LABEL names the run, e.g. its nominal aspect ratio)

Python 3 standard library only.
"""
import csv
import os
import struct
import sys


def read_ply(path):
    """(x, y, z, radius, speed) of every particle in a weft binary PLY file."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    count, props = 0, []
    for line in header:
        words = line.split()
        if words[:2] == ["element", "vertex"]:
            count = int(words[2])
        elif words[:1] == ["property"]:
            props.append((words[1], words[2]))
    fmt = "<" + "".join({"float": "f", "uint": "I", "int": "i", "double": "d"}[t] for t, _ in props)
    size = struct.calcsize(fmt)
    names = [n for _, n in props]
    ix, iy, iz, ir, iu, iv, iw = (names.index(k) for k in ("x", "y", "z", "radius", "vx", "vy", "vz"))
    out = []
    for k in range(count):
        rec = struct.unpack_from(fmt, data, end + k * size)
        speed = (rec[iu] ** 2 + rec[iv] ** 2 + rec[iw] ** 2) ** 0.5
        out.append((rec[ix], rec[iy], rec[iz], rec[ir], speed))
    return out


def contiguous(grains):
    """The grains in contact, directly or through others, with the one nearest the back wall
    (centres at most 1.05 diameters apart: contacts at rest overlap by microns, a grain rolling
    or bouncing ahead of the front is centimetres away), and the diameter."""
    d = 2.0 * grains[0][3]
    reach = 1.05 * d
    cells = {}
    for k, (x, y, z, _, _) in enumerate(grains):
        cells.setdefault((int(x // reach), int(y // reach), int(z // reach)), []).append(k)
    seed = min(range(len(grains)), key=lambda k: grains[k][0])
    seen, todo = {seed}, [seed]
    while todo:
        k = todo.pop()
        x, y, z, _, _ = grains[k]
        cx, cy, cz = int(x // reach), int(y // reach), int(z // reach)
        for i in (cx - 1, cx, cx + 1):
            for j in (cy - 1, cy, cy + 1):
                for m in (cz - 1, cz, cz + 1):
                    for n in cells.get((i, j, m), ()):
                        if n in seen:
                            continue
                        u, v, w, _, _ = grains[n]
                        if (u - x) ** 2 + (v - y) ** 2 + (w - z) ** 2 <= reach * reach:
                            seen.add(n)
                            todo.append(n)
    return [grains[k] for k in sorted(seen)], d


def stats_row(path, frame):
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if int(row["frame"]) == frame:
                return row
    raise SystemExit(f"{path}: no row for frame {frame}")


def main():
    if len(sys.argv) not in (5, 7):
        raise SystemExit(__doc__)
    out, release, final, gate_x = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    start = read_ply(os.path.join(out, f"column_{release:06d}.ply"))
    end = read_ply(os.path.join(out, f"column_{final:06d}.ply"))

    l_i = gate_x
    h_i = max(y + r for _, y, _, r, _ in start)

    deposit, d = contiguous(end)
    l_f = max(x + r for x, _, _, r, _ in deposit)
    h_f = max(y + r for _, y, _, r, _ in deposit)
    x_max = max(x + r for x, _, _, r, _ in end)
    before, _ = contiguous(read_ply(os.path.join(out, f"column_{final - 6:06d}.ply")))
    v_max = max(v for *_, v in deposit)
    creep = l_f - max(x + r for x, _, _, r, _ in before)

    s0, s1 = stats_row(os.path.join(out, "stats.csv"), release), stats_row(
        os.path.join(out, "stats.csv"), final)
    ke0, ke1 = float(s0["kinetic_energy"]), float(s1["kinetic_energy"])
    pe_drop = float(s0["potential_energy"]) - float(s1["potential_energy"])

    if len(sys.argv) == 7:
        top = {}
        for x, y, _, r, _ in deposit:
            k = int(x // d)
            top[k] = max(top.get(k, 0.0), y + r)
        with open(sys.argv[5], "a") as f:
            for k in sorted(top):
                f.write(f"{sys.argv[6]},{h_i / l_i:.4f},{(k + 0.5) * d / l_i:.4f},{top[k] / l_i:.4f}\n")

    print(f"{h_i / l_i:.4f},{len(end)},{l_i:.4f},{h_i:.4f},{l_f:.4f},{h_f:.4f},{(l_f - l_i) / l_i:.4f},"
          f"{h_f / l_i:.4f},{x_max:.4f},{len(end) - len(deposit)},{creep * 1000:.1f},{v_max:.3f},{ke0:.3e},{ke1:.3e},{pe_drop:.4e}")


if __name__ == "__main__":
    main()
