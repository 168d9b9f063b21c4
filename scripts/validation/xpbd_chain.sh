#!/usr/bin/env bash
# The XPBD hanging-chain sweep of docs/validation.md: runs test_cloth_xpbd_chain's full sweep
# ({1, 4, 16, 64} iterations x {8, 64, 256} substeps, compliance 0, 12 s each) and writes
#   docs/validation/xpbd_chain.csv   substeps, iterations, period, period error against
#                                    Bernoulli (%), largest and final energy change (% of the swing)
#   docs/validation/xpbd_chain.md    the same as a Markdown table
#   docs/validation/xpbd_chain.png   period error and energy growth against iterations, one line
#                                    per substep count (only where gnuplot is installed; otherwise
#                                    the CSV is the result and this script plots it when rerun)
# Usage: scripts/validation/xpbd_chain.sh [build dir (default build)] [cpu|cuda (default cpu)]
# The CPU and CUDA backends give bitwise equal states, so the same numbers; the CPU sweep takes
# about 7 s on one core (CUDA: 2 min, launch-bound).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
device=${2:-cpu}
exe=$build/solvers/cloth/tests/test_cloth_xpbd_chain
cmake --build "$build" --target test_cloth_xpbd_chain >/dev/null
out=docs/validation
mkdir -p "$out"
WEFT_TEST_SLOW=1 TH_WATCHDOG_S=0 "$exe" --device "$device" xpbd_chain_sweep | tee /dev/stderr |
  sed -n 's/^csv,//p' >"$out/xpbd_chain.csv"
{
  echo "| substeps | iterations | period (s) | vs Bernoulli | largest energy change | energy change at 12 s |"
  echo "|---:|---:|---:|---:|---:|---:|"
  tail -n +2 "$out/xpbd_chain.csv" | awk -F, '{printf "| %d | %d | %.5f | %+.2f%% | %+.3f%% | %+.2f%% |\n", $1, $2, $3, $4, $5, $6}'
} >"$out/xpbd_chain.md"
cat "$out/xpbd_chain.md"
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 1000,420 noenhanced
set output "$out/xpbd_chain.png"
set datafile separator ","
set multiplot layout 1,2 title "XPBD hanging chain, 16 links, compliance 0 (test_cloth_xpbd_chain)"
set logscale x 2
set xlabel "iterations"
set key top left
set ylabel "period error vs Bernoulli (%)"
plot for [s in "8 64 256"] "< awk -F, '\$1==".s."' $out/xpbd_chain.csv" using 2:4 with linespoints title s." substeps"
set ylabel "energy change (% of the swing)"
set key bottom left
plot for [s in "8 64 256"] "< awk -F, '\$1==".s."' $out/xpbd_chain.csv" using 2:5 with linespoints title s." substeps, largest", \
     for [s in "8 64 256"] "< awk -F, '\$1==".s."' $out/xpbd_chain.csv" using 2:6 with linespoints dashtype 2 title s." substeps, at 12 s"
unset multiplot
GP
  echo "wrote $out/xpbd_chain.png"
else
  echo "gnuplot not installed: $out/xpbd_chain.csv is the result (rerun this script with gnuplot to plot it)"
fi
