#!/usr/bin/env bash
# Two keelc builds' CUDA executables side by side on the GPU, in two halves (the GPU machine has no
# LLVM, so models are compiled here and shipped):
#
#   scripts/cuda-ab.sh prepare KEELC_A KEELC_B [MODELS] [PRECISION] [BATCHES]   # here: stage .gpu/ab
#   (device) bash .gpu/ab/run.sh                                               # there: compare
#
# MODELS: comma list of bundled models (default mobilenet_v2,squeezenet1_1,tiny_bert); PRECISION:
# keelc --precision (default fp16); BATCHES: comma list for image models (default 1,32; other
# models run at their bundled shape). run.sh runs keel-run on both executables of every
# model/batch (outputs must be bit-identical, else it prints DIFFERENT) and then keel-cuda-time's
# compute_ms (10 warm-up, 200 timed runs) three times, A and B alternating: one line per case.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] && [ $# -ge 3 ] || { echo "usage: scripts/cuda-ab.sh prepare KEELC_A KEELC_B [MODELS] [PRECISION] [BATCHES]"; exit 2; }
keelc_a=$2 keelc_b=$3 models=${4:-mobilenet_v2,squeezenet1_1,tiny_bert} precision=${5:-fp16} batches=${6:-1,32}
shared=${KEEL_SHARED_DIR:-../shared}
stage=.gpu/ab
rm -rf "$stage"; mkdir -p "$stage"
KEEL_BUILD_TARGETS="keel-run keel-cuda-time" scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_TESTS=ON -DKEEL_BUILD_BENCH=ON
cp build/bin/keel-run build/bin/keel-cuda-time "$stage/"
for m in ${models//,/ }; do
  shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['inputs'][0]['shape'][1:])))" "$shared/models/$m.json")
  these=1; [ "$(echo "$shape" | tr ',' '\n' | wc -l)" = 3 ] && these=${batches//,/ }
  for b in $these; do
    for v in A B; do
      k=$keelc_a; [ $v = B ] && k=$keelc_b
      "$k" "$shared/models/$m.onnx" -o "$stage/$m.b$b.$v.keel" --target cuda --precision "$precision" \
        --input-shape "input=$b,$shape" >/dev/null
    done
  done
done
cat >"$stage/run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for base in $(ls *.A.keel | sed 's/\.A\.keel$//'); do
  for v in A B; do ./keel-run "$base.$v.keel" --device cuda --output-dir "/tmp/ab_$base.$v" >/dev/null 2>&1 || echo "$base.$v: keel-run failed"; done
  same=DIFFERENT
  cmp -s "/tmp/ab_$base.A/output.bin" "/tmp/ab_$base.B/output.bin" && same=identical
  line="$base outputs $same | compute_ms"
  for r in 1 2 3; do
    for v in A B; do
      ms=$(./keel-cuda-time "$base.$v.keel" --warmup 10 --iterations 200 2>/dev/null | grep -o '"compute_ms": [0-9.]*' | cut -d' ' -f2)
      line="$line $v $ms"
    done
  done
  echo "$line"
done
RUN
chmod +x "$stage/run.sh"
echo "device call: carry [\"$stage\"]  command: bash $stage/run.sh"
