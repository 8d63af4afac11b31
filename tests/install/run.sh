#!/usr/bin/env bash
# Installs the bertc build into a scratch prefix, builds tests/install (an outside project that
# uses find_package(bertc) and bertc_add_model), and runs its program.
# Usage: run.sh BUILD_DIR PROJECT_DIR WORK_DIR CONFIG
set -euo pipefail
build=$1 project=$2 work=$3 config=$4
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$project" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
stats=$("$work/build/outside-model" compile "$config" --emit stats)
echo "$stats"
# The same parameter count as bert-tiny: a ReLU swaps the activation, not any weight.
grep -q "parameters  537,410 in 46 tensors" <<<"$stats" || { echo "FAIL: unexpected parameter count"; exit 1; }
grep -q "model relu-bert" <<<"$stats" || { echo "FAIL: not the outside model"; exit 1; }
echo "PASS: outside project built against the installed bertc"
