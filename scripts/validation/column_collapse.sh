#!/usr/bin/env bash
# The granular column collapse of docs/validation.md: runs scenes/column_collapse.json (a column of
# glass beads behind a gate in a narrow channel, released at 0.4 s) at several aspect ratios with
# `weft run --set`, measures each deposit (scripts/validation/column_collapse_measure.py) and writes
#   docs/validation/column_collapse.csv           a, beads, L_i, H_i, L_f, H_f, (L_f - L_i)/L_i,
#                                                 H_f/L_i, farthest bead, detached beads, the
#                                                 front's move in the last 0.1 s, the deposit's
#                                                 fastest bead, kinetic energy at release and at
#                                                 the end, potential energy lost (the columns of
#                                                 column_collapse_measure.py)
#   docs/validation/column_collapse_profiles.csv  the deposits' surfaces (run, a, x/L_i, h/L_i)
#   docs/validation/column_collapse.md            the table of docs/validation.md
#   docs/images/column_collapse.png               run-out and final height against a with the
#                                                 published laws, and the deposits (gnuplot, from
#                                                 scripts/deps.sh; without it the CSVs are the result)
# Usage: scripts/validation/column_collapse.sh [build dir (default build)] [aspect ratios
#        (default "0.5 1 2 4")]
# The column is L_i = 0.2 m = 19 beads of 1 cm long and 4 beads wide; its height is a L_i before it
# settles (the settled a is the one reported). A run costs about 30 s of one idle CPU core per
# 1 000 beads per simulated second (700 substeps per frame): a = 2 (2 888 beads, 1.6 s) 2.3
# minutes, a = 4 (5 776 beads, 2 s) about 6, a = 8 (11 552 beads, 2.5 s; not in the default list)
# about 15. Outputs go to
# out/validation/column_collapse (WORK overrides); MEASURE_ONLY=1 measures the runs already there.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
aspects=${2:-"0.5 1 2 4"}
cmake --build "$build" --target weft_cli >/dev/null
weft=$build/weft
work=${WORK:-out/validation/column_collapse}
out=docs/validation
img=docs/images
mkdir -p "$work" "$out" "$img"

scene=scenes/column_collapse.json
spacing=0.0105   # the scene's lattice spacing (particles[0].spacing)
length=0.2       # L_i: the gate's inner face (colliders[4]: centre 0.25, half width 0.05)
release=24       # frame 24 = 0.4 s, the gate's active_until (an output frame: outputs.every = 6)

csv=$out/column_collapse.csv
profiles=$out/column_collapse_profiles.csv
echo "a,beads,L_i,H_i,L_f,H_f,runout,height,x_max,detached,creep_mm,v_max,ke_release,ke_final,pe_drop" >"$csv"
echo "run,a,x_over_L_i,h_over_L_i" >"$profiles"
for a in $aspects; do
  # rows of beads for a column a L_i high; the run lasts 3 free-fall times of the column
  # sqrt(2 H / g) after release plus 0.3 s, in whole output intervals (the measurement reports
  # how far the front still moved in the last 0.1 s: 0 when it has stopped)
  read -r ny half_y center_y final < <(python3 -c "
import math
ny = max(1, round($a * $length / $spacing))
h = ny * $spacing
print(ny, h / 2, h / 2 + 0.0003, $release + 6 * math.ceil((3 * math.sqrt(2 * h / 9.81) + 0.3) * 60 / 6))")
  dir=$work/a$a
  if [ "${MEASURE_ONLY:-0}" != 1 ]; then
    rm -rf "$dir"
    echo "a = $a: $ny rows of beads, $final frames" >&2
    "$weft" run "$scene" --quiet --out "$dir" --frames "$final" \
      --set "particles[0].half_extents=[0.1,$half_y,0.021]" \
      --set "particles[0].center=[0.1,$center_y,0]"
  fi
  python3 scripts/validation/column_collapse_measure.py "$dir" "$release" "$final" "$length" \
    "$profiles" "$a" | tee -a "$csv"
done

# Lube et al. 2005's laws: run-out 1.2 a (a < 2.3), 1.9 a^(2/3) (a > 2.3); height a (a < 1.15),
# a^(2/5) (a > 1.15); docs/validation.md gives the sources
{
  echo "| a (settled) | beads | H_i (m) | run-out (L_f − L_i)/L_i | Lube et al. 2005 | weft / Lube | H_f/L_i | Lube et al. 2005 | beads ahead of the front | front's last 0.1 s | deposit's fastest bead |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  tail -n +2 "$csv" | awk -F, '{
    a = $1; lube = (a < 2.3) ? 1.2 * a : 1.9 * a^(2/3); h = (a < 1.15) ? a : a^0.4
    printf "| %.3f | %d | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %.1f mm | %.2f m/s |\n",
      a, $2, $4, $7, lube, $7 / lube, $8, h, $10, $11, $12 }'
} >"$out/column_collapse.md"
cat "$out/column_collapse.md"

if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 1350,480 noenhanced font ",10"
set grid
set output "$img/column_collapse.png"
set datafile separator ","
set multiplot layout 1,3 title "Granular column collapse in a channel 4 beads wide, L_i = 19 beads (scenes/column_collapse.json)"
set logscale xy
set xrange [0.3:12]
set xlabel "aspect ratio a = H_i / L_i"
set key bottom right font ",9"
set ylabel "run-out (L_f - L_i) / L_i"
plot [0.3:12] [0.2:20] (x < 2.3 ? 1.2 * x : 1/0) with lines lw 2 lc rgb "gray40" title "Lube et al. 2005: 1.2 a (a < 2.3)", \
     (x > 2.3 ? 1.9 * x**(2.0/3) : 1/0) with lines lw 2 dt 2 lc rgb "gray40" title "Lube et al. 2005: 1.9 a^(2/3) (a > 2.3)", \
     "$csv" using 1:7 with linespoints pt 7 ps 1.3 lc rgb "red" title "weft (DEM, Hertz)"
set ylabel "final height H_f / L_i"
plot [0.3:12] [0.2:5] (x < 1.15 ? x : 1/0) with lines lw 2 lc rgb "gray40" title "Lube et al. 2005: a (a < 1.15)", \
     (x > 1.15 ? x**0.4 : 1/0) with lines lw 2 dt 2 lc rgb "gray40" title "Lube et al. 2005: a^(2/5) (a > 1.15)", \
     "$csv" using 1:8 with linespoints pt 7 ps 1.3 lc rgb "red" title "weft"
unset logscale
set xrange [0:*]
set yrange [0:*]
set xlabel "x / L_i (from the back wall; the gate was at 1)"
set ylabel "deposit surface h / L_i"
set key top right
plot for [r in "$aspects"] "< awk -F, '\$1 == \"".r."\"' $profiles" using 3:4 with steps lw 2 title "a = ".r." (nominal)"
unset multiplot
GP
  echo "wrote $img/column_collapse.png"
else
  echo "gnuplot not installed: $csv is the result (rerun this script with gnuplot to plot it)"
fi
