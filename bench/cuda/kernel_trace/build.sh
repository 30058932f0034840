#!/usr/bin/env bash
# Builds libkeel_cupti_trace.so (cupti_trace.cc) into DEST and copies libcupti.so.13 beside it.
# CUPTI's headers and library come from the nvidia-cuda-cupti wheel (PyPI), fetched once into
# build/cupti with the test virtualenv's pip; KEEL_CUPTI_DIR=DIR (with include/ and lib/) uses
# another copy. A measuring tool: nothing in Keel links it.
#   bash bench/cuda/kernel_trace/build.sh DEST
# On the GPU machine: LD_PRELOAD=DEST/libkeel_cupti_trace.so LD_LIBRARY_PATH=DEST:... PROGRAM
# writes KEEL_CUPTI_OUT (a TSV); kernel_trace.py TSV --nodes prints the per-replay table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
dest=${1:?usage: build.sh DEST}
cupti=${KEEL_CUPTI_DIR:-}
if [ -z "$cupti" ]; then
  cupti=$root/build/cupti/nvidia/cu13
  if [ ! -f "$cupti/include/cupti.h" ]; then
    mkdir -p "$root/build/cupti"
    "$root/.venv/bin/pip" download -q --no-deps "nvidia-cuda-cupti>=13.0,<13.1" -d "$root/build/cupti"
    python3 -m zipfile -e "$root"/build/cupti/nvidia_cuda_cupti-*.whl "$root/build/cupti"
  fi
fi
mkdir -p "$dest"
g++ -std=c++17 -O2 -shared -fPIC -I"$cupti/include" -I/usr/local/cuda/include "$here/cupti_trace.cc" \
  -o "$dest/libkeel_cupti_trace.so" -L"$cupti/lib" -l:libcupti.so.13 -Wl,-rpath,'$ORIGIN'
cp "$cupti/lib/libcupti.so.13" "$dest/"
cp "$here/kernel_trace.py" "$dest/"
