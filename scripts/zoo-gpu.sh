#!/usr/bin/env bash
# The model zoo on the GPU (tests/models/export_zoo.py), in two halves: the GPU machine has
# no LLVM (no keelc) and its torch differs from the exporter's (2.11 vs 1.13, other random
# weights), so models are exported, compiled for CUDA and given their PyTorch CPU
# references here, and only run there.
#
#   scripts/zoo-gpu.sh prepare [MODELS]   # here: build, export, compile --target cuda, stage .gpu/zoo
#   scripts/zoo-gpu.sh prepare-onnx [MODELS]
#                                         # here: build, export with compact weights, check on the
#                                         # CPU, stage compressed ONNX + a keelc bundle: the large
#                                         # models then fit one call and are compiled there
#   scripts/zoo-gpu.sh pack               # here: only regroup what export_zoo.py --gpu-stage
#                                         # .gpu/zoo/staging left (prepare ends with it)
#   (device) bash scripts/zoo-gpu.sh run [GROUP]   # there: run staged models, compare, time
#
# MODELS: comma list (default: all of the zoo). A device call carries at most 64 MiB, so
# prepare packs the staged files into groups .gpu/zoo/g1, g2, ... of at most 56 MiB each
# (a file too large for one group is split into parts across consecutive groups) and prints
# the carry list of each call: .gpu/zoo/common plus one group. run GROUP runs the models
# whose last part arrived with that group, rebuilding split files from parts that earlier
# calls left on the (still warm) machine; without GROUP it runs every complete model there.
# Keel runs with TF32 off (its default): each output must match PyTorch's fp32 CPU output
# to a relative L2 <= 1e-4. Timings: keel-cuda-time (CUDA-graph replay) and, where the
# device's torch has torchvision, PyTorch eager and CUDA-graph replay of the same
# architecture (other random weights; timing only) with TF32 off.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# prepare/pack stage into .gpu/zoo of this checkout (or $KEEL_ZOO_STAGE); pack also copies this
# script into the stage's common/, so that `bash STAGE/common/zoo-gpu.sh run gN` works from any
# checkout the device call copies (it finds its stage beside itself).
if [ "$(basename "$here")" = common ] && [ "${1:-}" = run ]; then
  stage=$(cd "$here/.." && pwd)
else
  cd "$here/.."
  stage=${KEEL_ZOO_STAGE:-.gpu/zoo}
fi
carry_limit=$((58 * 1024 * 1024))  # a group + common; + the checkout (4 MiB) <= 64 MiB

prepare() {
  set -e
  local models=${1:-}
  KEEL_BUILD_TARGETS="keelc keel-run keel-cuda-time" scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_BENCH=ON
  rm -rf "$stage"; mkdir -p "$stage/staging"
  local sel=(--all); [ -n "$models" ] && sel=(--models "$models")
  # A model that fails on the CPU is still staged when its cuda compile worked: the GPU
  # result is worth having either way, so the exit status is not fatal here.
  /usr/bin/python3 tests/models/export_zoo.py --out build/zoo --bin build/bin "${sel[@]}" \
    --gpu-stage "$stage/staging" || echo "(some models failed on the CPU; see the table)"
  pack
}

# Like prepare, but the models travel as compressed ONNX with compact weights (export_zoo.py
# --gpu-stage-onnx) and keelc travels with them (keelc_bundle): the GPU machine compiles them.
prepare_onnx() {
  set -e
  local models=${1:-}
  KEEL_BUILD_TARGETS="keelc keel-run keel-cuda-time" scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_BENCH=ON
  rm -rf "$stage"; mkdir -p "$stage/staging"
  local sel=(--all); [ -n "$models" ] && sel=(--models "$models")
  /usr/bin/python3 tests/models/export_zoo.py --out build/zoo --bin build/bin "${sel[@]}" --no-cuda \
    --gpu-stage-onnx "$stage/staging" || echo "(some models failed on the CPU and are not staged; see the table)"
  KEEL_ZOO_KEELC_BUNDLE=1 pack
}

# keelc and the shared libraries it needs that the GPU machine lacks (LLVM, protobuf, ONNX, ...;
# not glibc or the C++ runtime, which the machine has in newer versions), as one xz tarball of
# about 40 MB. Kept in build/ and remade only when keelc changes.
keelc_bundle() {
  local out=build/keelc-bundle.tar.xz
  if [ ! -f "$out" ] || [ build/bin/keelc -nt "$out" ]; then
    local dir; dir=$(mktemp -d); mkdir -p "$dir/keelc/lib"
    cp build/bin/keelc "$dir/keelc/"
    ldd build/bin/keelc | awk '$3 ~ /^\// {print $3}' \
      | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' \
      | xargs -I{} cp -L {} "$dir/keelc/lib/"
    tar -C "$dir" -cf - keelc | xz -T0 -6 >"$out.tmp" && mv "$out.tmp" "$out"
    rm -rf "$dir"
  fi
  cp "$out" "$1/keelc-bundle.tar.xz"
}

# Packs $stage/staging (export_zoo.py --gpu-stage or --gpu-stage-onnx) into the carry groups.
pack() {
  set -e
  [ -d "$stage/staging" ] || { echo "nothing staged in $stage/staging"; exit 1; }
  rm -rf "$stage"/g* "$stage/common"; mkdir -p "$stage/common/bin"
  cp build/bin/keel-run build/bin/keel-cuda-time "$stage/common/bin/"
  cp scripts/zoo-gpu.sh tests/models/zoo_models.py tests/models/export_gru.py "$stage/common/"
  if [ "${KEEL_ZOO_KEELC_BUNDLE:-0}" = 1 ] || ls "$stage"/staging/*.onnx.xz >/dev/null 2>&1; then keelc_bundle "$stage/common"; fi
  local group_limit=$((carry_limit - $(du -sb "$stage/common" | cut -f1)))
  /usr/bin/python3 - "$stage" "$group_limit" <<'PY'
import json, os, sys
stage, limit = sys.argv[1], int(sys.argv[2])
src = os.path.join(stage, "staging")
names = sorted(f[:-5] for f in os.listdir(src) if f.endswith(".json"))
files = lambda n: sorted(f for f in os.listdir(src) if f.split(".")[0] == n)
size = lambda n: sum(os.path.getsize(os.path.join(src, f)) for f in files(n))
groups = [[]]                          # each: [(file, offset, length, part or None)], "@NAME" markers
used = 0
def room():
    return limit - used
def new_group():
    global used
    if groups[-1]: groups.append([])
    used = 0
for n in sorted(names, key=size):      # small models first: the early calls cover the most models
    for f in files(n):
        total = os.path.getsize(os.path.join(src, f))
        if total <= limit:
            if total > room(): new_group()
            groups[-1].append((f, 0, total, None)); used += total
            continue
        off, k = 0, 0                  # too large for one group: parts fill the groups in turn
        while off < total:
            if room() < (1 << 20): new_group()
            length = min(room(), total - off)
            groups[-1].append((f, off, length, k)); used += length; off += length; k += 1
        groups[-1].append((f + ".parts", k, 0, "count"))
    groups[-1].append(("@" + n, 0, 0, None))
for gi, g in enumerate(groups, 1):
    d = os.path.join(stage, "g%d" % gi)
    os.makedirs(d, exist_ok=True)
    done = []
    for f, off, length, part in g:
        if f.startswith("@"):
            done.append(f[1:])
        elif part == "count":
            open(os.path.join(d, f), "w").write("%d\n" % off)
        else:
            with open(os.path.join(src, f), "rb") as fh:
                fh.seek(off); data = fh.read(length)
            open(os.path.join(d, f if part is None else "%s.part%03d" % (f, part)), "wb").write(data)
    open(os.path.join(d, "models.txt"), "w").write("".join(m + "\n" for m in done))
    mib = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 2**20
    print("g%d: %.1f MiB, completes: %s" % (gi, mib, " ".join(done) or "(parts only)"))
PY
  echo "device calls, one per group (keep the machine warm between calls that share split files):"
  for g in $(ls -d "$stage"/g* | sort -V); do
    echo "  carry [\"$stage/common\", \"$g\"]  command: bash $stage/common/zoo-gpu.sh run $(basename "$g")"
  done
}

# Compiles a model staged as NAME.onnx.xz with the carried keelc (unpacked once per bundle).
compile_here() {
  local m=$1 work=$2 out=$3 kdir=/tmp/keel-zoo-keelc
  local sum; sum=$(md5sum <"$stage/common/keelc-bundle.tar.xz")
  if [ ! -x "$kdir/keelc/keelc" ] || [ "$(cat "$kdir/bundle.md5" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$kdir" && mkdir -p "$kdir" && echo "$sum" >"$kdir/bundle.md5" && python3 -c "import lzma,sys,tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])" \
      "$stage/common/keelc-bundle.tar.xz" "$kdir" || { echo "$m: cannot unpack keelc" >>"$out/results.txt"; return; }
  fi
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'), 1<<24)" \
    "$work/$m.onnx.xz" "$work/$m.onnx"
  # Compact exports keep the batch symbolic: compile at the staged input's shape.
  local shape
  shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['input_shape'])))" "$work/$m.json")
  LD_LIBRARY_PATH="$kdir/keelc/lib:${LD_LIBRARY_PATH:-}" timeout 300 "$kdir/keelc/keelc" "$work/$m.onnx" \
    -o "$work/$m.keel" --target cuda --input-shape "input=$shape" >"$out/keelc_$m.log" 2>&1 \
    || echo "$m: keelc on this machine failed: $(tail -1 "$out/keelc_$m.log")" >>"$out/results.txt"
  rm -f "$work/$m.onnx"
}

run() {
  local only=${1:-}
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
  final=${OUT:-/tmp/keel-zoo-out}; work=$(mktemp -d /tmp/keel-zoo.XXXXXX)
  # Logs go to a scratch folder; only results.txt and one archive of them come back (a
  # device call returns a few files).
  out=$(mktemp -d /tmp/keel-zoo-logs.XXXXXX)
  mkdir -p "$final"
  trap 'cp "$out/results.txt" "$final/" 2>/dev/null; tar -czf "$final/logs.tar.gz" -C "$out" . 2>/dev/null' EXIT
  # Gather every file of every group present on the machine; split files are rebuilt from
  # their parts when all parts are here.
  /usr/bin/env python3 - "$stage" "$work" <<'PY'
import collections, os, re, shutil, sys
stage, work = sys.argv[1], sys.argv[2]
parts, counts = collections.defaultdict(dict), {}
for g in sorted(d for d in os.listdir(stage) if re.fullmatch(r"g\d+", d)):
    for f in os.listdir(os.path.join(stage, g)):
        path = os.path.join(stage, g, f)
        m = re.fullmatch(r"(.+)\.part(\d+)", f)
        if m:
            parts[m.group(1)][int(m.group(2))] = path
        elif f.endswith(".parts"):
            counts[f[:-6]] = int(open(path).read())
        elif f != "models.txt" and not os.path.lexists(os.path.join(work, f)):
            os.symlink(os.path.abspath(path), os.path.join(work, f))
for f, n in counts.items():
    if len(parts[f]) == n:
        with open(os.path.join(work, f), "wb") as o:
            for k in range(n):
                shutil.copyfileobj(open(parts[f][k], "rb"), o)
PY
  local models
  if [ -n "$only" ]; then models=$(cat "$stage/$only/models.txt"); else models=$(cat "$stage"/g*/models.txt 2>/dev/null); fi
  echo "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)" | tee -a "$out/results.txt"
  for m in $models; do
    if [ -f "$work/$m.onnx.xz" ] && [ ! -f "$work/$m.keel" ]; then compile_here "$m" "$work" "$out"; fi
    if [ ! -f "$work/$m.keel" ] || [ ! -f "$work/$m.keel.so" ]; then echo "$m: files incomplete on this machine" | tee -a "$out/results.txt"; continue; fi
    # Time limits: a model whose CUDA kernels are pathologically slow must not eat the call.
    timeout 120 "$stage/common/bin/keel-run" "$work/$m.keel" --device cuda --input "input=$work/$m.input.bin" \
      --output-dir "$work/out_$m" >"$out/run_$m.log" 2>&1 || echo "$m: keel-run failed: $(tail -1 "$out/run_$m.log")" >>"$out/results.txt"
    timeout 120 "$stage/common/bin/keel-cuda-time" "$work/$m.keel" --warmup 2 --iterations 10 --input "input=$work/$m.input.bin" --name "$m" \
      >"$out/time_$m.json" 2>"$out/time_$m.err" || true
  done
  python3 - "$work" "$out" "$stage/common" $models <<'PY' | tee -a "$out/results.txt"
import json, os, sys, time
import numpy as np
work, out, models_dir, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def torch_times(name, meta):
    """PyTorch on this GPU, same architecture (its own random weights), TF32 off: eager and graph replay ms."""
    try:
        import torch
        sys.path.insert(0, models_dir)
        import zoo_models
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        build, make_input, _ = zoo_models.MODELS[name]
        torch.manual_seed(0)
        m = zoo_models.randomize(build()).eval().cuda()
        x = make_input().cuda()
        with torch.no_grad():
            for _ in range(3): m(x)
            torch.cuda.synchronize(); t0 = time.perf_counter()
            for _ in range(20): m(x)
            torch.cuda.synchronize(); eager = (time.perf_counter() - t0) / 20 * 1e3
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3): m(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g): m(x)
            for _ in range(3): g.replay()
            torch.cuda.synchronize(); t0 = time.perf_counter()
            for _ in range(50): g.replay()
            torch.cuda.synchronize(); graph = (time.perf_counter() - t0) / 50 * 1e3
        return eager, graph
    except Exception as e:
        print("  (%s: torch timing failed: %s)" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
        return None, None
print("%-26s %10s %9s %9s %11s %11s  %s" % ("model", "rel L2", "keel e2e", "keel gpu", "torch eager", "torch graph", "status"))
bad = 0
for n in names:
    meta = json.load(open(os.path.join(work, n + ".json")))
    ref = np.fromfile(os.path.join(work, n + ".output.bin"), dtype=np.float32).astype(np.float64)
    p = os.path.join(work, "out_" + n, "output.bin")
    err = None
    if os.path.exists(p):
        got = np.fromfile(p, dtype=np.float32).astype(np.float64)
        if got.size == ref.size:
            err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
    try:
        t = json.load(open(os.path.join(out, "time_%s.json" % n)))
        e2e, gpu = "%.3f" % t["e2e_ms"], "%.3f" % t["compute_ms"]
    except Exception:
        e2e = gpu = "-"
    eager, graph = torch_times(n, meta)
    status = "ok" if err is not None and err <= 1e-4 else ("MISMATCH" if err is not None else "no output")
    bad += status != "ok"
    print("%-26s %10s %9s %9s %11s %11s  %s" % (n, "%.2e" % err if err is not None else "-", e2e, gpu,
          "%.3f" % eager if eager else "-", "%.3f" % graph if graph else "-", status))
print("ms; keel e2e: Run() with graph replay incl. input/output copies; keel gpu: device time of the graph less its copies;")
print("torch: same architecture, its own random weights, fp32 with TF32 off. rel L2 vs PyTorch 1.13 CPU (limit 1e-4).")
sys.exit(1 if bad else 0)
PY
}

case "${1:-}" in
  prepare) prepare "${2:-}" ;;
  prepare-onnx) prepare_onnx "${2:-}" ;;
  pack) pack ;;
  run) run "${2:-}" ;;
  *) echo "usage: scripts/zoo-gpu.sh prepare [MODELS] | prepare-onnx [MODELS] | pack | run [GROUP]"; exit 2 ;;
esac
