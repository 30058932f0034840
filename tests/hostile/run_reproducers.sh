#!/usr/bin/env bash
# tests/hostile/run_reproducers.sh BIN_DIR WORK_DIR — issue 13's reproducers through
# keelc and keel-plan. For each model in WORK_DIR/MANIFEST ("file<TAB>fragment"):
#   fragment "OK": the model is valid and must compile (exit 0);
#   otherwise: exit 1, exactly one line on stderr containing the fragment, never
#   INTERNAL (an INTERNAL error is a Keel bug; "uncaught" means an exception
#   reached the last-resort handler), within 60 s (a hang is a failure).
set -uo pipefail
bin=$1
work=$2
rm -rf "$work"
"$bin/keel_make_hostile_models" "$work/models" >/dev/null || exit 1
cd "$work/models"
# External data targets: a FIFO, a readable file outside the folder via a symlink.
mkfifo fifo.bin
printf '0123456789abcdef' > ../outside.bin
ln -s ../outside.bin link.bin

failures=0
check() {  # tool file fragment
  local tool=$1 file=$2 fragment=$3 rc
  local args=("$file")
  [ "$tool" = keelc ] && args+=(-o "$work/out.keel" -q)
  [ "$tool" = keel-plan ] && args+=(--strategies greedy-size --time-limit 1 --quiet)
  timeout 60 "$bin/$tool" "${args[@]}" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  local lines
  lines=$(wc -l <"$work/stderr")
  local why=""
  if [ "$fragment" = OK ]; then
    [ $rc -eq 0 ] || why="expected success, exit $rc"
  elif [ $rc -eq 124 ]; then
    why="timed out (hang)"
  elif [ $rc -ne 1 ]; then
    why="exit $rc, expected 1"
  elif [ "$lines" -ne 1 ]; then
    why="$lines lines on stderr, expected 1"
  elif grep -q 'uncaught exception' "$work/stderr"; then
    why="an exception reached the last-resort handler"
  elif grep -q 'INTERNAL' "$work/stderr"; then
    why="INTERNAL error"
  elif ! grep -qF -- "$fragment" "$work/stderr"; then
    why="message lacks '$fragment'"
  fi
  if [ -n "$why" ]; then
    echo "FAIL $tool $file: $why: $(head -c 400 "$work/stderr")"
    failures=$((failures + 1))
  else
    echo "ok   $tool $file: $(head -c 200 "$work/stderr")"
  fi
}
while IFS=$'\t' read -r file fragment; do
  for tool in keelc keel-plan; do
    [ -x "$bin/$tool" ] && check "$tool" "$file" "$fragment"
  done
done <MANIFEST
# Not a file at all: a directory and a FIFO as the model.
mkdir -p dir.onnx
check keelc dir.onnx "is a directory"
check keelc fifo.bin "is a FIFO"
# -o DIR/name creates DIR; a folder that cannot be made is a one-line error.
rm -rf "$work/made"
if "$bin/keelc" dropout_in_graph.onnx -o "$work/made/deeper/m.keel" -q && [ -f "$work/made/deeper/m.keel.so" ]; then
  echo "ok   keelc -o into a new folder"
else
  echo "FAIL keelc -o into a new folder"; failures=$((failures + 1))
fi
printf x >"$work/plainfile"
timeout 60 "$bin/keelc" dropout_in_graph.onnx -o "$work/plainfile/sub/m.keel" -q >"$work/stdout" 2>"$work/stderr"
if [ $? -eq 1 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ] && grep -q "cannot create the output folder" "$work/stderr"; then
  echo "ok   keelc -o under a file: $(cat "$work/stderr")"
else
  echo "FAIL keelc -o under a file: $(head -c 400 "$work/stderr")"; failures=$((failures + 1))
fi
# A damaged kernel library (truncated, one byte flipped) is refused before dlopen,
# and `keel-run --verify` tells a matching pair from a damaged one.
if [ -x "$bin/keel-run" ]; then
  lib_case() {  # name expected-exit command...
    local name=$1 want=$2 rc
    shift 2
    timeout 60 "$@" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    if [ $rc -ne "$want" ] || { [ "$want" -ne 0 ] && [ "$(wc -l <"$work/stderr")" -ne 1 ]; }; then
      echo "FAIL library $name: exit $rc (expected $want): $(head -c 400 "$work/stderr")"
      failures=$((failures + 1))
    else
      echo "ok   library $name: $(head -c 200 "$work/stderr")"
    fi
  }
  "$bin/keelc" dropout_in_graph.onnx -o "$work/m.keel" -q || { echo "FAIL: keelc on a valid model"; exit 1; }
  cp "$work/m.keel.so" "$work/good.so"
  lib_case verify_ok 0 "$bin/keel-run" --verify "$work/m.keel"
  lib_case runs 0 "$bin/keel-run" "$work/m.keel"
  head -c 1000 "$work/good.so" >"$work/m.keel.so"
  lib_case truncated 1 "$bin/keel-run" "$work/m.keel"
  lib_case verify_truncated 1 "$bin/keel-run" --verify "$work/m.keel"
  cp "$work/good.so" "$work/m.keel.so"
  printf '\377' | dd of="$work/m.keel.so" bs=1 seek=600 conv=notrunc 2>/dev/null
  lib_case flipped 1 "$bin/keel-run" "$work/m.keel"
  lib_case verify_flipped 1 "$bin/keel-run" --verify "$work/m.keel"
fi
echo "$failures failure(s)"
[ $failures -eq 0 ]
