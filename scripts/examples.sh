#!/usr/bin/env bash
# Builds and installs weft into a temporary prefix, then builds the examples against that install
# only (as a user would) and runs them:
#   examples/embed_cloth      CMake, find_package(weft) -> weft::weft; runs on "auto" (CPU here)
#   examples/embed_pkgconfig  plain Makefile with pkg-config weft; runs scenes/cloth_drape.json
#   examples/external_stream  C + CUDA; built only when nvcc is found, run only when a GPU is
#                             present (it exits 77, reported as skipped, when the installed weft
#                             has no CUDA backend)
#   python/ (import weft)     the installed package imported from <prefix>/lib/python3/dist-packages
#                             and a scene stepped, when it was built (Python 3 + NumPy found)
#   examples/mpi              the particles over 2 MPI ranks (mpirun), when an MPI is installed
# Exits non-zero on any failure. weft is built in build-examples/ (kept, so a second run is
# incremental) without its tests; WEFT_EXAMPLES_CUDA=ON|AUTO builds it with the CUDA backend
# (default OFF: CPU only, quicker). The prefix and the examples' builds are removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
cuda=${WEFT_EXAMPLES_CUDA:-OFF}
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "== examples: $*"; }

step "build and install weft (WEFT_CUDA=$cuda) into $prefix"
cmake -S . -B build-examples -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=OFF \
  -DWEFT_CUDA="$cuda" -DWEFT_BUILD_TESTS=OFF >/dev/null
cmake --build build-examples -j"$jobs"
cmake --install build-examples --prefix "$prefix" >/dev/null
for f in lib/libweft.so include/weft/weft.h include/weft/version.h \
  lib/cmake/weft/weftConfig.cmake lib/cmake/weft/weftConfigVersion.cmake \
  lib/cmake/weft/weftTargets.cmake lib/pkgconfig/weft.pc bin/weft; do
  [ -e "$prefix/$f" ] || { echo "examples: the install lacks $f" >&2; exit 1; }
done
# the public headers all went in
for h in include/weft/*.h; do
  [ -e "$prefix/$h" ] || { echo "examples: the install lacks $h" >&2; exit 1; }
done

step "embed_cloth (find_package(weft))"
cmake -S examples/embed_cloth -B "$work/embed_cloth" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS=-Werror >/dev/null
cmake --build "$work/embed_cloth"
(cd "$work" && "$work/embed_cloth/embed_cloth" auto)

step "embed_pkgconfig (pkg-config weft)"
cp -r examples/embed_pkgconfig "$work/embed_pkgconfig"
rm -f "$work/embed_pkgconfig/embed_pkgconfig"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -C "$work/embed_pkgconfig" \
  CFLAGS="-O2 -Wall -Wextra -Werror"
"$work/embed_pkgconfig/embed_pkgconfig" "$root/scenes/cloth_drape.json" 20

pydir="$prefix/lib/python3/dist-packages"
if [ -d "$pydir/weft" ]; then # built when CMake found Python 3 with NumPy (WEFT_PYTHON=AUTO)
  step "python: the installed package (import weft from $pydir)"
  py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  (cd "$work" && PYTHONPATH="$pydir" "$py" -c "
import numpy as np, weft
w = weft.World(weft.Scene.load('$root/scenes/cloth_drape.json'), device='cpu')
w.step(5)
pos, _ = w.download(0)
assert np.isfinite(pos).all() and w.frame == 5
b = weft.Buffer((4, 4), device='cpu', zero=True)
assert np.asarray(b).__array_interface__['data'][0] == b.ptr
print('python: installed weft stepped cloth_drape 5 frames,', len(pos), 'vertices')
")
else
  echo "python: not built (no Python 3 development files or NumPy), skipped"
fi

if command -v nvcc >/dev/null; then
  step "external_stream (C + CUDA, $(command -v nvcc))"
  cmake -S examples/external_stream -B "$work/external_stream" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    -DCMAKE_C_FLAGS=-Werror >/dev/null
  cmake --build "$work/external_stream"
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    rc=0
    "$work/external_stream/external_stream" || rc=$?
    if [ "$rc" = 77 ]; then
      echo "external_stream: skipped (the installed weft has no CUDA backend: WEFT_EXAMPLES_CUDA=ON)"
    elif [ "$rc" != 0 ]; then
      echo "examples: external_stream failed (exit $rc)" >&2
      exit 1
    fi
  else
    echo "external_stream: built; not run (no GPU)"
  fi
else
  echo "external_stream: not built (no nvcc)"
fi
# examples/mpi: the particles over MPI ranks, where an MPI is installed (and so in the installed
# weft: WEFT_MPI=AUTO). Root is allowed through Open MPI's variables (CI runs as root).
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  step "mpi (particles over 2 MPI ranks)"
  cmake -S examples/mpi -B "$work/mpi" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS=-Werror >/dev/null
  cmake --build "$work/mpi"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np 2 --oversubscribe "$work/mpi/mpi_particles" 4
else
  echo "mpi: not built (no mpicc/mpirun: scripts/deps.sh installs Open MPI)"
fi
step "all passed"
