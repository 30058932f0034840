#!/usr/bin/env bash
# cudnn-engines round, build-machine half: stages the runtime binaries (from $BD, default
# build-engines), the engine test, and resnet18 compiled for CUDA at batch 1 and 32 into $S
# (default .gpu/engines) for one device call (64 MiB limit): batch 1 as a gzip'd executable,
# batch 32 as its FlatBuffer head + batch 1's weight tail (keelc writes the same constant
# segment). keelc comes from $KEELC (any build with the compiler). On the GPU machine:
# `bash $S/run.sh` (see there).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
S=${S:-.gpu/engines}; BD=${BD:-build-engines}; SH=${KEEL_SHARED_DIR:-../shared}
KEELC=${KEELC:-$BD/bin/keelc}; M=${MODEL:-resnet18}; BATCHES=${BATCHES:-1 32}
rm -rf $S; mkdir -p $S/pack/bin $S/pack/lib $S/pack/models
cp $HERE/run.sh $HERE/torch_tf32.py $SH/anchors/torch_latency.py $S/
cp $BD/bin/keel-run $BD/bin/keel-cuda-time $BD/bin/keel_cudnn_engine_conv_test $BD/bin/keel_cuda_library_kernels_test \
   $S/pack/bin/
strip $S/pack/bin/* || true
cp $BD/lib/libkeel_cuda_test_kernels*.so $S/pack/lib/
cp $SH/models/$M.input.bin $SH/models/$M.output.bin $S/pack/models/
shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['inputs'][0]['shape'][1:])))" $SH/models/$M.json)
first=""
for b in $BATCHES; do
  $KEELC $SH/models/$M.onnx -o $S/pack/models/$M.b$b.keel --target cuda --input-shape "input=$b,$shape" \
    >$S/pack/models/$M.b$b.keelc.txt
  if [ -z "$first" ]; then first=$b; continue; fi
  python3 - $S/pack/models/$M.b$first.keel $S/pack/models/$M.b$b.keel <<'PY'
import sys
a = open(sys.argv[1], 'rb').read(); b = open(sys.argv[2], 'rb').read()
n = 0
while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]: n += 1
open(sys.argv[2] + '.head', 'wb').write(b[:len(b) - n])
open(sys.argv[2] + '.tail', 'w').write('%s %d\n' % (sys.argv[1].split('/')[-1], n))
PY
  rm $S/pack/models/$M.b$b.keel
done
gzip -6 $S/pack/models/$M.b$first.keel
echo "$M $BATCHES" >$S/model.txt
tar -czf $S/pack.tar.gz -C $S/pack . && rm -rf $S/pack
ls -la $S; du -sh $S
