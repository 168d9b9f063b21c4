#!/usr/bin/env python3
"""scripts/plot_stats.py on a stats.csv made here (the columns weft run writes, 5 rows of known
values): the SVG is well-formed XML with one polyline per plotted column (4 energies, max_speed)
of one point per row, whose ends sit on the panel's corners (the plot spans the data); --summary
prints each column's first/last/min/max exactly; an unknown column exits 2 naming the columns
there are. Standard library only; run by ctest (label unit) where Python 3 is found.
"""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "plot_stats.py")
HEADER = ("frame,time,kinetic_energy,potential_energy,momentum_x,momentum_y,momentum_z,max_speed,"
          "particles,vertices,ms_per_frame,elastic_energy,total_energy,a.kinetic,a.potential,a.elastic")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    fails = 0

    def check(cond, what):
        nonlocal fails
        if not cond:
            fails += 1
            print(f"  FAIL: {what}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as d:
        csv = os.path.join(d, "stats.csv")
        with open(csv, "w") as f:
            f.write(HEADER + "\n")
            for k in range(5):  # frames 0, 2, .. 8 at 60 fps; ke = k, pe = 10 - k, el = 0.5
                t = 2 * k / 60
                f.write(f"{2 * k},{t!r},{k},{10 - k},0,0,0,{0.25 * k},8,0,1.5,0.5,10.5,{k},{10 - k},0.5\n")
        r = run(csv)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        svg = os.path.join(d, "stats.svg")
        check(r.stdout.strip() == svg, f"prints the picture's path: {r.stdout!r}")
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        lines = root.findall(f"{ns}polyline")
        check(len(lines) == 5, f"{len(lines)} polylines, want 5")
        texts = [t.text for t in root.iter(f"{ns}text")]
        for c in ("kinetic_energy", "potential_energy", "elastic_energy", "total_energy", "max_speed"):
            check(c in texts, f"legend names {c}")
        check("a.kinetic" not in texts, "per-object columns are not in the default panels")
        rects = [r for r in root.findall(f"{ns}rect") if r.get("fill") == "none"]
        check(len(rects) == 2, f"{len(rects)} panels, want 2")
        for pl in lines:
            pts = [tuple(map(float, p.split(","))) for p in pl.get("points").split()]
            check(len(pts) == 5, f"{len(pts)} points, want 5")
            xs = [p[0] for p in pts]
            check(xs == sorted(xs), "time increases to the right")
        # max_speed (last panel): 0 at t = 0 and 1 at t = 8/60; the ticks (0 .. 1, 0 .. 0.14)
        # cover exactly 0 .. 1 in y, so its ends are the panel's bottom-left and top-right-ish
        ms = [tuple(map(float, p.split(","))) for p in lines[-1].get("points").split()]
        box = rects[1]
        x0, y0 = float(box.get("x")), float(box.get("y"))
        h = float(box.get("height"))
        check(abs(ms[0][0] - x0) < 1e-6 and abs(ms[0][1] - (y0 + h)) < 1e-6, f"first point {ms[0]}")
        check(abs(ms[-1][1] - y0) < 1e-6, f"last point at the top: {ms[-1]} vs y {y0}")

        r = run(csv, "--summary")
        check(r.returncode == 0 and "5 rows" in r.stdout, r.stdout + r.stderr)
        check("kinetic_energy: first 0, last 4, min 0, max 4 J" in r.stdout, r.stdout)
        check("max_speed: first 0, last 1, min 0, max 1 m/s" in r.stdout, r.stdout)

        r = run(csv, "--columns", "a.kinetic;nope")
        check(r.returncode == 2 and "nope" in r.stderr and "a.kinetic" in r.stderr, r.stderr)
        r = run(csv, "--columns", "a.kinetic,a.potential;max_speed", "-o", os.path.join(d, "x.svg"))
        check(r.returncode == 0 and os.path.exists(os.path.join(d, "x.svg")), r.stderr)
        r = run(os.path.join(d, "missing.csv"))
        check(r.returncode == 1 and "missing.csv" in r.stderr, r.stderr)
    print("plot_stats: " + ("ok" if fails == 0 else f"{fails} failed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
