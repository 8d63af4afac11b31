#!/usr/bin/env bash
# The README's main command: set up and build, then compile examples/bert-base.toml and show its
# IR and statistics. (Training replaces this once it exists.) Extra arguments go to `bertc compile`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BERTC_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
bertc=$build/tools/bertc
config=$root/examples/bert-base.toml
"$bertc" compile "$config" --emit ir "$@"
echo
"$bertc" compile "$config" --emit stats "$@"
