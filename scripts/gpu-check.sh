#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds weft with CUDA, runs the gpu and parity tests, then runs
# every gpu test again under compute-sanitizer's memcheck, racecheck, initcheck and synccheck, and
# a short run of every bundled scene (scenes/*.json: a few frames through `weft run` on cuda:0,
# with every output it writes) under the same four tools. Exits non-zero on any failure or
# sanitizer report.
#   scripts/gpu-check.sh [--tests-only | --sanitize-only] [build-dir]
# --tests-only: the gpu and parity tests only; --sanitize-only: the sanitizer runs only.
# CMAKE_CUDA_ARCHITECTURES defaults to 90 and WEFT_WERROR (warnings as errors) to ON; WEFT_SANITIZE_TIMEOUT (s, default 600) bounds each run.
# WEFT_SANITIZE_FILTER: a ctest -R regex choosing which gpu tests run under the sanitizers;
# WEFT_SANITIZE_TOOLS: the tools (default "memcheck racecheck initcheck synccheck");
# WEFT_SCENE_FRAMES: frames of each scene run (default 2).
# The ctest output is printed; sanitizer runs print one line each (and the log tail on failure).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in --tests-only) mode=tests; shift ;; --sanitize-only) mode=sanitize; shift ;; esac
dir=${1:-build-gpu}
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
export NCCL_NVLS_ENABLE=0
cmake -S . -B "$dir" -G Ninja -DWEFT_CUDA=ON -DWEFT_WERROR="${WEFT_WERROR:-ON}" \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" >/dev/null || exit 1
cmake --build "$dir" -j"$(nproc)" || exit 1
fail=0
if [ $mode != sanitize ]; then
  (cd "$dir" && ctest -L 'gpu|parity' --output-on-failure --timeout 600) || fail=1
fi
[ $mode = tests ] && exit $fail

# The commands ctest would run for the gpu tests, one per line.
mapfile -t cmds < <(cd "$dir" && ctest -L gpu -R "${WEFT_SANITIZE_FILTER:-.}" -N -V |
  sed -n 's/^[0-9]*: Test command: //p')
# Short runs of every bundled scene on the GPU, outputs into a scratch directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
weft=$(cd "$dir" && pwd)/weft
for scene in scenes/*.json; do
  name=$(basename "$scene" .json)
  cmds+=("'$weft' run '$scene' --device cuda --frames ${WEFT_SCENE_FRAMES:-2} --quiet --out '$scratch/$name'")
done
# The tools slow kernels down many times over: the per-test watchdog of tests/harness.h is
# replaced by the timeout above.
export TH_WATCHDOG_S=0
read -r -a tools <<<"${WEFT_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}"
for tool in "${tools[@]}"; do
  for c in "${cmds[@]}"; do
    eval "set -- $c"
    name=$(basename "$1")
    [ "$name" = weft ] && name="weft run $(basename "$3")"
    log=$(mktemp)
    # CUDA API errors are not reported: the error-path tests provoke them on purpose (an unjoined
    # capture, an allocation larger than the GPU) and every test checks each call's status itself.
    timeout "${WEFT_SANITIZE_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      --report-api-errors no "$@" >"$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
      echo "compute-sanitizer $tool $name: FAILED (rc $rc) $summary"
      tail -40 "$log"
      fail=1
    else
      echo "compute-sanitizer $tool $name: ok ${summary}"
    fi
    rm -f "$log"
  done
done
exit $fail
