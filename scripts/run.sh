#!/usr/bin/env bash
# The README's main command: set up and build, then train bert-tiny on the bundled corpus
# (examples/data) from scratch, on a GPU once bertc has a GPU runtime, on the CPU until then.
# A fresh run each time: checkpoints and metrics go to a new folder under runs/.
# Extra arguments go to `bertc train` (e.g. --steps 100).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BERTC_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
run_dir=$root/runs/bert-tiny-$(date +%Y%m%d-%H%M%S)
exec "$build/tools/bertc" train "$root/examples/bert-tiny.toml" --device auto --checkpoint-dir "$run_dir" "$@"
