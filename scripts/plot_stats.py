#!/usr/bin/env python3
"""Plot a weft run's stats.csv against time.

    python3 scripts/plot_stats.py out/stats.csv              # -> out/stats.svg
    python3 scripts/plot_stats.py out/stats.csv -o e.svg --columns kinetic_energy,total_energy
    python3 scripts/plot_stats.py out/stats.csv --png        # matplotlib, where installed
    python3 scripts/plot_stats.py out/stats.csv --summary    # numbers, no picture

By default two panels share the time axis: every whole-scene energy column (the names ending in
"_energy": kinetic, potential, elastic, total and whatever a newer weft adds), in J, and
max_speed, in m/s. --columns gives one panel per comma-separated group instead ("a,b;c": a and b
together, c below). The SVG is written with the standard library alone, so the script runs
wherever Python 3 does; --png draws the same panels through matplotlib when it is importable.

Exit status: 0 ok, 1 the file cannot be read or has no rows, 2 bad usage (an unknown column is
named with the columns there are).
"""
import argparse
import csv
import html
import math
import os
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


def read(path):
    """The header and the rows of a stats.csv, as floats (columns that do not parse: nan)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise ValueError(f"{path}: empty file, no header")
        rows = []
        for line in reader:
            if not line:
                continue
            vals = []
            for s in line[: len(header)]:
                try:
                    vals.append(float(s))
                except ValueError:
                    vals.append(math.nan)
            vals += [math.nan] * (len(header) - len(vals))
            rows.append(vals)
    return header, rows


def default_panels(header):
    energies = [c for c in header if c.endswith("_energy") and "." not in c]
    panels = []
    if energies:
        panels.append(energies)
    if "max_speed" in header:
        panels.append(["max_speed"])
    return panels


def unit(column):
    if column.endswith("energy") or column.endswith((".kinetic", ".potential", ".elastic")):
        return "J"
    if "speed" in column:
        return "m/s"
    if column.startswith("momentum"):
        return "kg m/s"
    if column == "ms_per_frame":
        return "ms"
    return ""


def nice_ticks(lo, hi, n=5):
    """About n round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:  # a constant: a band around it
        pad = abs(lo) * 0.1 or 0.5
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    first = math.floor(lo / step) * step
    ticks, t = [], first
    while t <= hi + step * 0.5:
        ticks.append(round(t, 12))
        t += step
    return ticks


def fmt(v):
    return f"{v:.4g}"


def svg(path, title, time, panels, series):
    width, ph, left, right, top, gap = 900, 260, 90, 220, 40, 50
    height = top + len(panels) * (ph + gap) + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{html.escape(title)}</text>',
    ]
    t0, t1 = min(time), max(time)
    xt = nice_ticks(t0, t1)
    t0, t1 = min(t0, xt[0]), max(t1, xt[-1])
    pw = width - left - right
    for p, cols in enumerate(panels):
        y0 = top + p * (ph + gap)
        vals = [v for c in cols for v in series[c] if math.isfinite(v)]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        yt = nice_ticks(lo, hi)
        lo, hi = min(lo, yt[0]), max(hi, yt[-1])

        def X(t):
            return left + (t - t0) / (t1 - t0 or 1) * pw

        def Y(v):
            return y0 + ph - (v - lo) / (hi - lo or 1) * ph

        out.append(f'<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        for t in xt:
            out.append(f'<line x1="{X(t):.1f}" y1="{y0}" x2="{X(t):.1f}" y2="{y0 + ph}" stroke="#ddd"/>')
            out.append(f'<text x="{X(t):.1f}" y="{y0 + ph + 15}" text-anchor="middle">{fmt(t)}</text>')
        for v in yt:
            out.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{left + pw}" y2="{Y(v):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
        units = sorted({unit(c) for c in cols} - {""})
        out.append(f'<text x="{left}" y="{y0 - 6}">{", ".join(units)}</text>')
        out.append(f'<text x="{left + pw / 2}" y="{y0 + ph + 32}" text-anchor="middle">time (s)</text>')
        for k, c in enumerate(cols):
            colour = COLOURS[k % len(COLOURS)]
            pts = " ".join(f"{X(t):.2f},{Y(v):.2f}" for t, v in zip(time, series[c]) if math.isfinite(v))
            if pts:
                out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
            ly = y0 + 16 + 18 * k
            out.append(f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 36}" y2="{ly - 4}" '
                       f'stroke="{colour}" stroke-width="2"/>')
            out.append(f'<text x="{left + pw + 42}" y="{ly}">{html.escape(c)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def png(path, title, time, panels, series):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(9, 2.8 * len(panels)), squeeze=False)
    for ax, cols in zip(axes[:, 0], panels):
        for c in cols:
            ax.plot(time, series[c], label=c)
        ax.set_ylabel(", ".join(sorted({unit(c) for c in cols} - {""})))
        ax.legend(loc="best", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Plot a weft run's stats.csv against time.")
    ap.add_argument("csv", help="stats.csv written by weft run")
    ap.add_argument("-o", "--output", help="picture to write (default: beside the CSV, .svg or .png)")
    ap.add_argument("--columns", help='columns to plot: "a,b;c" (";" starts a new panel)')
    ap.add_argument("--png", action="store_true", help="draw through matplotlib (if installed)")
    ap.add_argument("--summary", action="store_true", help="print first/last/min/max, no picture")
    a = ap.parse_args(argv)
    try:
        header, rows = read(a.csv)
    except (OSError, ValueError) as e:
        print(f"plot_stats: {e}", file=sys.stderr)
        return 1
    if not rows:
        print(f"plot_stats: {a.csv}: no rows (did the run write a frame?)", file=sys.stderr)
        return 1
    if a.columns:
        panels = [[c.strip() for c in group.split(",") if c.strip()] for group in a.columns.split(";")]
        panels = [p for p in panels if p]
    else:
        panels = default_panels(header)
    unknown = [c for p in panels for c in p if c not in header]
    if unknown or not panels:
        print(f"plot_stats: {a.csv}: no column {', '.join(unknown) or '(none chosen)'}; "
              f"the columns are: {', '.join(header)}", file=sys.stderr)
        return 2
    series = {c: [r[header.index(c)] for r in rows] for p in panels for c in p}
    tcol = "time" if "time" in header else header[0]
    time = [r[header.index(tcol)] for r in rows]
    if a.summary:
        print(f"{len(rows)} rows, {tcol} {fmt(time[0])} .. {fmt(time[-1])}")
        for p in panels:
            for c in p:
                v = [x for x in series[c] if math.isfinite(x)]
                if v:
                    print(f"{c}: first {fmt(v[0])}, last {fmt(v[-1])}, min {fmt(min(v))}, "
                          f"max {fmt(max(v))} {unit(c)}")
        return 0
    title = os.path.basename(os.path.dirname(os.path.abspath(a.csv))) + "/" + os.path.basename(a.csv)
    out = a.output or os.path.splitext(a.csv)[0] + (".png" if a.png else ".svg")
    if a.png:
        try:
            png(out, title, time, panels, series)
        except ImportError:
            print("plot_stats: --png needs matplotlib, which is not installed; "
                  "without --png an SVG is written with the standard library", file=sys.stderr)
            return 1
    else:
        svg(out, title, time, panels, series)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
