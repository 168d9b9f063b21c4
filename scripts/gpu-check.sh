#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds weft with CUDA, runs the gpu, parity and python tests, then runs
# every gpu test again under compute-sanitizer's memcheck, racecheck, initcheck and synccheck, and
# a short run of every bundled scene (scenes/*.json: a few frames through `weft run` on cuda:0,
# with every output it writes) under the same four tools. Exits non-zero on any failure or
# sanitizer report.
#   scripts/gpu-check.sh [--tests-only | --sanitize-only] [build-dir]
# --tests-only: the gpu, parity and mpi_cuda tests only; --sanitize-only: the sanitizer runs only.
#
# Under a sanitizer every test case of every gpu test program runs as a process of its own
# (`prog --device cuda CASE`), several at once, and each process checks its first
# WEFT_SANITIZE_LAUNCHES kernel launches (default 4000: every kernel of a test case's first
# frames; later launches run unchecked, so the long physics tests finish in minutes instead of
# hours; 0 checks every launch).
#
# Environment:
#   CMAKE_CUDA_ARCHITECTURES  default 90
#   WEFT_WERROR               warnings as errors, default ON
#   WEFT_SANITIZE_TOOLS       default "memcheck racecheck initcheck synccheck"
#   WEFT_SANITIZE_FILTER      a ctest -R regex choosing the gpu test programs (default all)
#   WEFT_SANITIZE_TIMEOUT     seconds for each sanitizer run (default 600)
#   WEFT_SANITIZE_JOBS        sanitizer runs at once (default 8 per GPU)
#   WEFT_SANITIZE_GPUS        GPUs the runs are spread over, round robin, each run seeing one
#                             (CUDA_VISIBLE_DEVICES; default: every GPU nvidia-smi lists)
#                             (initcheck always checks every launch: see sanitize_one)
#   WEFT_RACECHECK_LAUNCHES   launches racecheck checks per run (default 800: every kernel of a
#                             test case's first frame; racecheck is the slowest tool by far)
#   WEFT_SCENE_FRAMES         frames of each scene run (default 2)
#   WEFT_RACECHECK_ALL        1: racecheck instruments every kernel. By default it checks only the
#                             kernels that use shared memory (found with cuobjdump in libweft),
#                             since racecheck reports shared-memory hazards only; that keeps the
#                             long physics cases within the timeout
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
  (cd "$dir" && ctest -L 'gpu|parity|mpi_cuda' --output-on-failure --timeout 600) || fail=1
  # the Python package's tests (python/tests/test_cuda.py runs on the GPU: torch/CuPy zero-copy,
  # the joint capture with PyTorch replayed 1000 times); absent when WEFT_PYTHON found no Python
  (cd "$dir" && ctest -L python --output-on-failure --timeout 600 --no-tests=ignore) || fail=1
fi
[ $mode = tests ] && exit $fail

# One command per test case of every gpu test program (the programs ctest runs with --device
# cuda; `--list` names their cases).
cmds=()
while read -r prog; do
  while read -r case_name; do
    cmds+=("'$prog' --device cuda '$case_name'")
  done < <("$prog" --list)
done < <(cd "$dir" && ctest -L gpu -R "${WEFT_SANITIZE_FILTER:-.}" -N -V |
  sed -n 's/^[0-9]*: Test command: \(.*\) "--device" "cuda".*/\1/p' | tr -d '"' | sort -u)
# The out-of-memory tests run after the others, one at a time (other runs on their GPU would
# change its free memory between their measuring it and asking for more than it).
alone=()
for i in "${!cmds[@]}"; do
  case "${cmds[$i]}" in *test_oom*) alone+=("${cmds[$i]}"); unset 'cmds[i]' ;; esac
done
cmds=("${cmds[@]}")
# Short runs of every bundled scene on the GPU, outputs into a scratch directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
weft=$(cd "$dir" && pwd)/weft
for scene in scenes/*.json; do
  name=$(basename "$scene" .json)
  cmds+=("'$weft' run '$scene' --device cuda --frames ${WEFT_SCENE_FRAMES:-2} --quiet --out '$scratch/$name'")
done
# The tools slow kernels down many times over: the per-test watchdog of tests/harness.h is
# replaced by WEFT_SANITIZE_TIMEOUT ...
export TH_WATCHDOG_S=0
# ... and every launch waits for its kernel, which tests that check for non-blocking calls are
# told (tests/harness.h, th_launches_serialized).
export TH_SERIALIZED_LAUNCHES=1
limit=()
[ "${WEFT_SANITIZE_LAUNCHES:-4000}" != 0 ] && limit=(--launch-count "${WEFT_SANITIZE_LAUNCHES:-4000}")

# Runs one command under one tool; prints one line, and the log's tail on failure.
sanitize_one() {
  local tool=$1 gpu=$2 c=$3 log rc summary name
  export CUDA_VISIBLE_DEVICES=$gpu WEFT_SANITIZER_TOOL=$tool
  eval "set -- $c"
  name="$(basename "$1") ${*:2}"
  [ "$(basename "$1")" = weft ] && name="weft run $(basename "$3")"
  log=$(mktemp)
  local extra=() lim=("${limit[@]}")
  if [ "$tool" = racecheck ]; then
    read -r -a extra <<<"${racecheck_filter:-}"
    [ ${#lim[@]} -gt 0 ] && lim=(--launch-count "${WEFT_RACECHECK_LAUNCHES:-800}")
  fi
  # initcheck instruments every launch: with a launch limit, memory written by the unchecked
  # later kernels reads as uninitialized when a checked copy downloads it (a false report)
  [ "$tool" = initcheck ] && lim=()
  # CUDA API errors are not reported: the error-path tests provoke them on purpose (an unjoined
  # capture, an allocation larger than the GPU) and every test checks each call's status itself.
  timeout "${WEFT_SANITIZE_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
    --report-api-errors no "${lim[@]}" "${extra[@]}" "$@" >"$log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    printf 'compute-sanitizer %s %s (GPU %s): FAILED (rc %d) %s\n%s\n' "$tool" "$name" "$gpu" \
      $rc "$summary" "$(tail -40 "$log")"
    rm -f "$log"
    return 1
  fi
  echo "compute-sanitizer $tool $name: ok ${summary}"
  rm -f "$log"
}
export -f sanitize_one
# The kernels with static shared memory (cuobjdump's resource usage), as racecheck filters.
racecheck_filter=
if [ "${WEFT_RACECHECK_ALL:-0}" != 1 ] && command -v cuobjdump >/dev/null; then
  lib=$(ls "$dir"/libweft.so* 2>/dev/null | head -1)
  [ -n "$lib" ] && racecheck_filter=$(cuobjdump --dump-resource-usage "$lib" 2>/dev/null |
    awk '/Function [^ ]*:/ {name = $2; sub(/:$/, "", name)}
         /SHARED:[1-9]/ && name != "" {print "--kernel-name kne=" name; name = ""}' | sort -u |
    tr '\n' ' ')
  echo "racecheck checks the $(wc -w <<<"$racecheck_filter" | awk '{print $1 / 2}') kernels that use shared memory"
fi
export racecheck_filter
export limit_str="${limit[*]}"

read -r -a tools <<<"${WEFT_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}"
gpus=${WEFT_SANITIZE_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "${gpus:-0}" -ge 1 ] 2>/dev/null || gpus=1
jobs=${WEFT_SANITIZE_JOBS:-$((8 * gpus))}
echo "sanitizer runs: ${#cmds[@]} commands x ${#tools[@]} tools, $jobs at once on $gpus GPU(s)"
for tool in "${tools[@]}"; do
  i=0
  for c in "${cmds[@]}"; do
    printf '%s\0%s\0' $((i % gpus)) "$c"
    i=$((i + 1))
  done | xargs -0 -n2 -P "$jobs" bash -c \
    'limit=($limit_str); sanitize_one "$0" "$1" "$2"' "$tool" || fail=1
  # The out-of-memory tests size their scenes from the GPU's free memory: alone on their GPU.
  for c in "${alone[@]}"; do
    sanitize_one "$tool" 0 "$c" || fail=1
  done
done
exit $fail
