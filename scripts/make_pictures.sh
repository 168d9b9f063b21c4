#!/bin/sh
# Renders the README's pictures with weft's own commands: for each scene, a still
# (docs/images/<scene>_last.png, the last frame of `weft run --render`), a short animation
# (docs/images/<scene>.gif, `weft run --video`, FFmpeg's GIF encoder) and the plot of its
# stats.csv (docs/images/<scene>_stats.svg, scripts/plot_stats.py). Keep each file under 300 KB:
# small pictures, a frame every EVERY simulation frames.
# Usage: scripts/make_pictures.sh [BUILD_DIR] [SCENE ...]   (default: build; the scenes below,
# the ones that render in seconds on llvmpipe; the large granular scenes take minutes)
#   FRAMES (default 60), EVERY (4), WIDTH x HEIGHT (240 x 150) override the defaults.
# Without a GPU the pictures come from Mesa's llvmpipe: slow for the large granular scenes.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
scenes=${*:-cloth_drape cloth_fold cloth_table pour split_pile cloth_on_particles}
root=$(cd "$(dirname "$0")/.." && pwd)
weft=$build/weft
[ -x "$weft" ] || { echo "make_pictures: $weft not found (build first)" >&2; exit 2; }
frames=${FRAMES:-60} every=${EVERY:-4} width=${WIDTH:-240} height=${HEIGHT:-150}
out=$root/docs/images
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in $scenes; do
  echo "make_pictures: $s"
  "$weft" run "$root/scenes/$s.json" --frames "$frames" --every "$every" --render \
    --video "$out/$s.gif" --out "$tmp/$s" --set render.width="$width" \
    --set render.height="$height" --quiet
  last=$(ls "$tmp/$s/render/"frame_*.png | tail -n 1)
  cp "$last" "$out/${s}_last.png"
  python3 "$root/scripts/plot_stats.py" "$tmp/$s/stats.csv" -o "$out/${s}_stats.svg"
  ls -l "$out/${s}_last.png" "$out/$s.gif" "$out/${s}_stats.svg"
done
