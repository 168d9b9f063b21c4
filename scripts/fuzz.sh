#!/usr/bin/env bash
# Fuzzes every target in fuzz/ (fuzz/fuzz_<name>.c) with libFuzzer for N seconds each (default 60).
#   scripts/fuzz.sh [seconds-per-target] [name...]
# Configures build-fuzz with clang, -DWEFT_FUZZ=ON -DWEFT_CUDA=OFF and ASan+UBSan, builds only the
# fuzz targets, and runs each on a working copy of its corpus (build-fuzz/fuzz-work/<name>: the
# committed seeds in fuzz/corpus/<name>/ are never written). Crashes, leaks and timeouts are copied
# to fuzz/regressions/<name>/, where the ctest fuzz_<name>_replay keeps running them; the script then
# fails. A dictionary fuzz/fuzz_<name>.dict is used when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
dir=build-fuzz

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for src in fuzz/fuzz_*.c; do
    n=${src#fuzz/fuzz_}
    names+=("${n%.c}")
  done
fi

cmake -S . -B "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_FUZZ=ON -DWEFT_CUDA=OFF \
  -DWEFT_SANITIZE=address,undefined >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${names[@]/#/fuzz_}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for name in "${names[@]}"; do
  work=$dir/fuzz-work/$name
  art=$dir/fuzz-artifacts/$name
  mkdir -p "$work" "$art" "fuzz/regressions/$name"
  cp -n fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
  [ "$name" = scene ] && cp -n scenes/*.json "$work"/ 2>/dev/null || true
  case $name in
  scene) max_len=16384 ;;
  *) max_len=65536 ;;
  esac
  dict=()
  [ -f "fuzz/fuzz_$name.dict" ] && dict=(-dict="fuzz/fuzz_$name.dict")
  echo "== fuzz_$name: ${secs}s, max_len $max_len"
  rc=0
  "$dir/fuzz/fuzz_$name" "$work" "${dict[@]}" -max_total_time="$secs" -max_len="$max_len" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" || rc=$?
  found=0
  for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
    [ -e "$f" ] || continue
    cp "$f" "fuzz/regressions/$name/"
    echo "fuzz_$name: saved fuzz/regressions/$name/$(basename "$f")"
    found=1
  done
  if [ $rc -ne 0 ] || [ $found -ne 0 ]; then
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzing found problems in: ${failed[*]} (inputs in fuzz/regressions/)"
  exit 1
fi
echo "fuzzing: no problems found (${names[*]}, ${secs}s each)"
