#!/usr/bin/env bash
# First set-up command: installs what is missing, builds weft (with CUDA when nvcc is found) and runs
# the main job: a 30-frame granular column collapse on the default device (about 10 s on a 2-core
# CPU), written as PLY + stats.csv + a checkpoint under out/granular_column/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
./build/weft info
./build/weft run scenes/granular_column.json --frames 30 --out out/granular_column
