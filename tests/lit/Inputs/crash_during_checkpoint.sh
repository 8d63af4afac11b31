#!/usr/bin/env bash
# Kills (SIGKILL) a training run halfway through writing a checkpoint, then checks that the
# previous checkpoint still loads and training resumes from it.
# Usage: crash_during_checkpoint.sh BERTC CONFIG DIR
set -euo pipefail
bertc=$1 config=$2 dir=$3
rm -rf "$dir"
"$bertc" train "$config" --device cpu --until 3 --checkpoint-dir "$dir" 2>/dev/null
test -e "$dir/checkpoint-000003.safetensors"

# Continue towards step 6 with every file write paused halfway (BERTC_TEST_SLOW_WRITE_MS), and
# kill the process while checkpoint 6 is half on disk.
BERTC_TEST_SLOW_WRITE_MS=30000 "$bertc" train "$config" --device cpu --resume --checkpoint-dir "$dir" 2>/dev/null &
pid=$!
half_written() { compgen -G "$dir/.checkpoint-000006.safetensors.tmp.*" >/dev/null; }
for _ in $(seq 1 600); do half_written && break; sleep 0.1; done
if ! half_written; then
  kill -9 "$pid" 2>/dev/null || true
  echo "FAIL: no half-written checkpoint appeared within 60 s"
  exit 1
fi
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
echo "killed during the write of $(basename "$(compgen -G "$dir/.checkpoint-000006.safetensors.tmp.*")")"

test ! -e "$dir/checkpoint-000006.safetensors" || { echo "FAIL: the killed write left a checkpoint"; exit 1; }
"$bertc" train "$config" --device cpu --resume --checkpoint-dir "$dir" 2>&1 | grep "resuming from"
test -e "$dir/checkpoint-000006.safetensors" || { echo "FAIL: the resumed run wrote no checkpoint"; exit 1; }
if compgen -G "$dir/.checkpoint-*.tmp.*" >/dev/null; then echo "FAIL: a stale temporary file remains"; exit 1; fi
echo "PASS: the previous checkpoint survived the kill and training resumed from it"
