#!/usr/bin/env bash
# Size of the embeddable runtime (issue 12): prints, for the build folder given,
#   * libkeelvm.so stripped (bytes), its code (.text) and its exported symbols,
#   * keel_embed_c stripped: the C example with the runtime linked in statically
#     (libstdc++/libc stay shared),
# and fails when a size is above the committed limit (scripts/runtime-size-limits.txt;
# the CPU-only limits apply to a build without CUDA, the cuda ones otherwise) or when
# the exported symbols differ from the documented API (cmake/libkeelvm.exports).
#
#   scripts/runtime-size.sh [BUILD_DIR]     (default build; scripts/embed-check.sh passes
#                                            its CPU-only build-embed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
lib=$(ls "$dir"/lib/libkeelvm.so.*.* 2>/dev/null | head -1 || true)
[ -n "$lib" ] || { echo "runtime-size: no libkeelvm.so in $dir/lib (build target keel_vm_shared)" >&2; exit 1; }
embed="$dir/bin/keel_embed_c"
flavor=cpu
readelf -d "$lib" | grep -q 'NEEDED.*libcudart' && flavor=cuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

strip_size() { strip -o "$tmp/s" "$1" && stat -c %s "$tmp/s"; }
lib_bytes=$(strip_size "$lib")
lib_text=$(size -A "$lib" | awk '$1 == ".text" { print $2 }')
nm -D --defined-only "$lib" | awk '{ print $3 }' | c++filt | LC_ALL=C sort > "$tmp/exports"
exports=$(wc -l < "$tmp/exports")
embed_bytes=-
[ -x "$embed" ] && embed_bytes=$(strip_size "$embed")

printf '%-44s %10s\n' "runtime ($flavor build: $dir)" "bytes"
printf '%-44s %10s\n' "libkeelvm.so stripped" "$lib_bytes"
printf '%-44s %10s\n' "libkeelvm.so .text" "$lib_text"
printf '%-44s %10s\n' "libkeelvm.so exported symbols (count)" "$exports"
printf '%-44s %10s\n' "keel_embed_c stripped (runtime linked in)" "$embed_bytes"

fail=0
limit() { awk -v k="$1" '$1 == k { print $2 }' scripts/runtime-size-limits.txt; }
check() {  # name value
  local max; max=$(limit "${flavor}_$1")
  if [ -n "$max" ] && [ "$2" != - ] && [ "$2" -gt "$max" ]; then
    echo "runtime-size: $1 = $2 bytes is above the committed limit $max (scripts/runtime-size-limits.txt)" >&2
    fail=1
  fi
}
check libkeelvm_stripped "$lib_bytes"
check embed_c_stripped "$embed_bytes"
if ! diff -u cmake/libkeelvm.exports "$tmp/exports" > "$tmp/diff"; then
  echo "runtime-size: libkeelvm.so exports differ from cmake/libkeelvm.exports (the documented API):" >&2
  cat "$tmp/diff" >&2
  fail=1
fi
exit $fail
