#!/usr/bin/env bash
# cuda-perf round, build-machine half: stages binaries (from $BD, default
# build-cudaperf) and CUDA-compiled models into $S (default .gpu/cudaperf) so that
# one device call carries them (64 MiB limit): the first batch of each model as a
# gzip'd executable, other batches as their FlatBuffer head + the first one's
# shared weight tail (keelc writes the same constant segment), binaries in one
# tar.gz. On the GPU machine: `bash $S/run.sh` (unpacks, runs CUDA tests,
# end-to-end checks vs the PyTorch references, keel-cuda-time, keel-bench and
# torch_latency.py, and prints the summary table; KEEL_CUDA_* env via AB_ENV).
#   MODELS="squeezenet1_1:1,32 mobilenet_v2:1,32" bench/cuda/perf_round/stage.sh
# Optional: BW=1 also stages bench/cuda/kernel_bandwidth.py cases (needs python onnx).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
S=${S:-.gpu/cudaperf}; BD=${BD:-build-cudaperf}; SH=${KEEL_SHARED_DIR:-../shared}
mkdir -p $S; cp $HERE/run.sh $HERE/torch_prof.py $S/
rm -rf $S/bin $S/lib $S/models $S/bw $S/pack $S/pack.tar.gz; mkdir -p $S/pack/models $S/pack/bin $S/pack/lib
cp $BD/bin/keel-run $BD/bin/keel-bench $BD/bin/keel-cuda-time $BD/bin/keel_cuda_vm_test $BD/bin/keel_cuda_library_kernels_test $S/pack/bin/
strip $S/pack/bin/* || true
cp $BD/lib/libkeel_cuda_test_kernels*.so $S/pack/lib/
cp $SH/anchors/torch_latency.py $S/
: >$S/models.txt
for spec in ${MODELS:-squeezenet1_1:1,32 mobilenet_v2:1,32 resnet18:1,32}; do
  m=${spec%%:*}; bs=${spec#*:}
  cp $SH/models/$m.input.bin $SH/models/$m.output.bin $S/pack/models/
  shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['inputs'][0]['shape'][1:])))" $SH/models/$m.json)
  for b in ${bs//,/ }; do
    $BD/bin/keelc $SH/models/$m.onnx -o $S/pack/models/$m.b$b.keel --target cuda --input-shape "input=$b,$shape" >$S/pack/models/$m.b$b.keelc.txt
    echo "$m $b" >>$S/models.txt
  done
  first=${bs%%,*}
  for b in ${bs//,/ }; do
    [ $b = $first ] && continue
    python3 - $S/pack/models/$m.b$first.keel $S/pack/models/$m.b$b.keel <<'PY'
import sys
a = open(sys.argv[1], 'rb').read(); b = open(sys.argv[2], 'rb').read()
n = 0
while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]: n += 1
open(sys.argv[2] + '.head', 'wb').write(b[:len(b) - n])
open(sys.argv[2] + '.tail', 'w').write('%s %d\n' % (sys.argv[1].split('/')[-1], n))
PY
    rm $S/pack/models/$m.b$b.keel
  done
  gzip -6 $S/pack/models/$m.b$first.keel
done
if [ "${BW:-0}" = 1 ]; then python3 bench/cuda/kernel_bandwidth.py prepare $S/bw --keelc $BD/bin/keelc; fi
tar -czf $S/pack.tar.gz -C $S/pack . && rm -rf $S/pack
cat > $S/unpack.sh <<'SH'
#!/usr/bin/env bash
# Rebuilds bin/, lib/, models/ from pack.tar.gz (see stage_final.sh).
set -euo pipefail
R=$(cd "$(dirname "$0")" && pwd)
P=$R; tar -xzf $R/pack.tar.gz -C $P
for g in $P/models/*.keel.gz; do gunzip $g; done
for t in $P/models/*.tail; do
  read -r src n <$t; h=${t%.tail}.head; out=${t%.tail}
  cat $h >$out; tail -c $n $P/models/$src >>$out; rm $h $t
done
echo $P
SH
chmod +x $S/unpack.sh
ls -la $S/pack.tar.gz; du -sh $S
