#!/usr/bin/env bash
# Installs what Keel needs on a fresh Debian 12 machine: Debian packages for the
# C++ build, and a Python virtualenv (.venv) with the test tooling.
# Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(cmake ninja-build g++ llvm-16-dev libflatbuffers-dev flatbuffers-compiler libonnx-dev
      libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev libbenchmark-dev python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${KEEL_SKIP_VENV:-0}" != 1 ] && [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv (numpy, onnx, onnxruntime)"
  python3 -m venv .venv
  # Pinned: the ONNX conformance baseline (tests/conformance) is measured against
  # exactly these versions' node test cases.
  .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
fi
