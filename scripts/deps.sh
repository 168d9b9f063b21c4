#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages weft builds with, when any is missing. Idempotent.
# CUDA is optional: with nvcc on PATH (or in /usr/local/cuda/bin) the CUDA backend is built too.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang
      libcjson-dev                      # scene files
      libopenmpi-dev openmpi-bin        # MPI ranks (WEFT_MPI=AUTO builds them when found)
      libmetis-dev                      # cloth mesh partitioning
      libassimp-dev                     # mesh collider files (OBJ, STL, PLY, glTF)
      libepoxy-dev libglfw3-dev libcglm-dev libstb-dev libegl-dev  # viewer and --render
      libimgui-dev                      # the viewer's panel (Dear ImGui, GLFW + OpenGL3 backends)
      libegl-mesa0 libgl1-mesa-dri xvfb xauth                        # rendering without a GPU (CI)
      libavcodec-dev libavformat-dev libswscale-dev libavutil-dev  # weft run --video (FFmpeg)
      gnuplot-nox                       # the plots of docs/validation.md (scripts/validation/)
      python3-vtk9 python3-meshio       # real readers of the output files (tests/scripts/)
      python3-dev python3-numpy python3-pytest python3-torch python3-setuptools  # python/ (import weft)
      python3-matplotlib python3-mpi4py openmpi-bin)  # examples/python/
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "weft: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
