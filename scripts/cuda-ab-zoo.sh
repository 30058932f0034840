#!/usr/bin/env bash
# Two keelc builds on zoo architectures whose executables are too large to carry (a call's carry is
# 64 MiB): both keelc builds travel and compile on the GPU machine, as half-gpu.sh does.
#
#   scripts/half-gpu.sh prepare MODELS                 # here: stages .gpu/half (keelc's bundle = A)
#   scripts/cuda-ab-zoo.sh prepare KEELC_B             # here: stages .gpu/half/ab (B and the models)
#   (device) bash .gpu/half/ab/run.sh MODEL:BATCH ...  # carry [".gpu/half/common", ".gpu/half/ab"]
#
# run.sh compiles each MODEL at BATCH in fp16 with A (the bundle's keelc) and B, records each one's
# library choices (a tuning file), then prints keel-cuda-time's compute_ms for A and B alternating,
# three rounds (10 warm-up, 50 timed runs), and Nsight Compute's per-kernel device times of one
# inference of each (ncu_MODEL.BATCH.{a,b}.txt in $OUT; the pools listed). Last, batch 1 of the
# first model, B's build, under compute-sanitizer memcheck. Inputs: the model's reference input,
# rotated per batch entry.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] && [ $# = 2 ] || { echo "usage: scripts/cuda-ab-zoo.sh prepare KEELC_B"; exit 2; }
[ -d .gpu/half/g1 ] || { echo "cuda-ab-zoo: run scripts/half-gpu.sh prepare MODELS first"; exit 2; }
stage=.gpu/half/ab
rm -rf "$stage"; mkdir -p "$stage"
cp .gpu/half/g1/*.onnx.xz .gpu/half/g1/*.input.bin "$stage/"
xz -T0 -c "$2" >"$stage/keelc_b.xz"
sed -n '/^#==RUN/,$p' "$0" | tail -n +2 >"$stage/run.sh"
chmod +x "$stage/run.sh"
echo "device call: carry [\".gpu/half/common\", \"$stage\"]  command: OUT=\$OUT/ab bash $stage/run.sh MODEL:BATCH ..."
exit 0
#==RUN
#!/usr/bin/env bash
g=$(cd "$(dirname "$0")" && pwd); c=$g/../common; out=${OUT:-.}; mkdir -p "$out"; w=$(mktemp -d)
k=/tmp/keel-zoo-keelc
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
mkdir -p $k && python3 -c "import lzma,sys,tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])" "$c/keelc-bundle.tar.xz" "$k"
xz -dc "$g/keelc_b.xz" >"$k/keelc/keelc_b" && chmod +x "$k/keelc/keelc_b"
keelc() { LD_LIBRARY_PATH="$k/keelc/lib:$LD_LIBRARY_PATH" "$@"; }
for mb in "$@"; do
  m=${mb%%:*} b=${mb#*:}
  [ -f "$w/$m.onnx" ] || python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'), 1<<24)" "$g/$m.onnx.xz" "$w/$m.onnx"
  python3 -c "import numpy as np,sys; x=np.fromfile(sys.argv[1],np.float32); np.concatenate([np.roll(x,i) for i in range(int(sys.argv[3]))]).tofile(sys.argv[2])" "$g/$m.input.bin" "$w/$m.in$b.bin" "$b"
  for v in a b; do
    kc=$k/keelc/keelc; [ $v = b ] && kc=$k/keelc/keelc_b
    keelc "$kc" "$w/$m.onnx" -o "$w/$m.$b.$v.keel" --target cuda --precision fp16 --batch "$b" >"$out/keelc_$m.$b.$v.log" 2>&1 || echo "keelc $v $m failed"
    "$c/bin/keel-cuda-time" "$w/$m.$b.$v.keel" --warmup 3 --iterations 5 --input "input=$w/$m.in$b.bin" --tuning-file "$w/$m.$b.$v.tuning" >/dev/null 2>&1
  done
  line="$m b$b"
  for r in 1 2 3; do for v in a b; do
    t=$("$c/bin/keel-cuda-time" "$w/$m.$b.$v.keel" --warmup 10 --iterations 50 --input "input=$w/$m.in$b.bin" --tuning-file "$w/$m.$b.$v.tuning" 2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['compute_ms'])")
    line="$line $v=$t"
  done; done
  echo "$line"
  for v in a b; do
    timeout 200 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv "$c/bin/keel-cuda-time" "$w/$m.$b.$v.keel" --warmup 0 \
      --iterations 1 --input "input=$w/$m.in$b.bin" --tuning-file "$w/$m.$b.$v.tuning" >"$w/ncu.csv" 2>/dev/null
    python3 "$c/ncu_summary.py" "$w/ncu.csv" >"$out/ncu_$m.$b.$v.txt"
    echo "== ncu $m b$b $v"; head -1 "$out/ncu_$m.$b.$v.txt"; grep -i pool "$out/ncu_$m.$b.$v.txt" | head -8
  done
done
m=${1%%:*}
keelc "$k/keelc/keelc_b" "$w/$m.onnx" -o "$w/$m.1.mc.keel" --target cuda --precision fp16 --batch 1 >/dev/null 2>&1
timeout 240 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 "$c/bin/keel-run" "$w/$m.1.mc.keel" \
  --device cuda --input "input=$g/$m.input.bin" >"$out/memcheck_$m.b.log" 2>&1
echo "memcheck $m fp16 b1 (B) rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck_$m.b.log")"
