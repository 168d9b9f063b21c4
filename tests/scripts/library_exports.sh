#!/bin/sh
# libweft.so exports the names that start with "wf" and nothing else (cmake/weft.map): a name
# outside the API in its dynamic symbol table is lent to every library loaded after it (a C++
# runtime linked in by the toolchain made PyTorch abort: docs/python.md). Also fails when the
# library exports too few names (a map that hides the API). Usage: library_exports.sh LIB
lib=$1
command -v nm >/dev/null 2>&1 || { echo "library_exports: nm not found: skipped"; exit 77; }
table=$(nm -D --defined-only "$lib") || { echo "library_exports: cannot read $lib"; exit 1; }
others=$(printf '%s\n' "$table" | awk 'NF >= 3 && $3 !~ /^wf/ {print $3}')
count=$(printf '%s\n' "$table" | awk 'NF >= 3 && $3 ~ /^wf_/' | wc -l)
if [ -n "$others" ]; then
  echo "library_exports: $lib exports $(printf '%s\n' "$others" | wc -l) names outside wf*, e.g.:"
  printf '%s\n' "$others" | head -10
  exit 1
fi
if [ "$count" -lt 100 ]; then
  echo "library_exports: $lib exports $count wf_ names; the API has more: is cmake/weft.map right?"
  exit 1
fi
echo "library_exports: $lib exports $count wf_ names and nothing outside wf*"
