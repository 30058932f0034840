#!/usr/bin/env bash
# The test command: installs dependencies, builds into build/, runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DKEEL_BUILD_TESTS=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
