#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds weft with CUDA, runs the gpu and parity tests, then runs
# every gpu test again under compute-sanitizer's memcheck, racecheck and synccheck (and initcheck
# with WEFT_INITCHECK=1). Exits non-zero on any failure or sanitizer report.
#   scripts/gpu-check.sh [--tests-only | --sanitize-only] [build-dir]
# CMAKE_CUDA_ARCHITECTURES defaults to 90; WEFT_SANITIZE_TIMEOUT (s, default 600) bounds each run.
# The ctest output is printed; sanitizer runs print one line each (and the log tail on failure).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in --tests-only) mode=tests; shift ;; --sanitize-only) mode=sanitize; shift ;; esac
dir=${1:-build-gpu}
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
export NCCL_NVLS_ENABLE=0
cmake -S . -B "$dir" -G Ninja -DWEFT_CUDA=ON -DWEFT_WERROR=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" >/dev/null || exit 1
cmake --build "$dir" -j"$(nproc)" || exit 1
fail=0
if [ $mode != sanitize ]; then
  (cd "$dir" && ctest -L 'gpu|parity' --output-on-failure --timeout 600) || fail=1
fi
[ $mode = tests ] && exit $fail

# The commands ctest would run for the gpu tests, one per line.
# WEFT_SANITIZE_FILTER: a ctest -R regex choosing which gpu tests run under the sanitizers.
mapfile -t cmds < <(cd "$dir" && ctest -L gpu -R "${WEFT_SANITIZE_FILTER:-.}" -N -V |
  sed -n 's/^[0-9]*: Test command: //p')
tools=(memcheck racecheck synccheck)
[ "${WEFT_INITCHECK:-0}" = 1 ] && tools+=(initcheck)
for tool in "${tools[@]}"; do
  for c in "${cmds[@]}"; do
    eval "set -- $c"
    name=$(basename "$1")
    log=$(mktemp)
    # CUDA API errors are not reported: the error-path tests provoke them on purpose (an unjoined
    # capture, for one) and every test checks each call's status itself.
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
