#!/usr/bin/env bash
# The README's test command: set up and build (scripts/setup.sh), then run every test with ctest
# (GoogleTest unit tests, the sanitizer fuzz test, lit/FileCheck IR tests, the install test).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BERTC_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
cd "$build"
exec ctest --output-on-failure -j"$(nproc)"
