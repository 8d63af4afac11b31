#!/usr/bin/env bash
# Stops a training run twice (SIGTERM, then SIGTERM again) while its checkpoint is half on disk:
# the second signal ends it at once, and the half-written checkpoint must go with it (it was left
# behind, up to gigabytes, in a folder the user may never train in again), said on stderr; the
# checkpoint before it still resumes.
# Usage: second_signal_during_checkpoint.sh BERTC CONFIG DIR
set -euo pipefail
bertc=$1 config=$2 dir=$3
rm -rf "$dir"
"$bertc" train "$config" --device cpu --until 3 --checkpoint-dir "$dir" 2>/dev/null
BERTC_TEST_SLOW_WRITE_MS=30000 "$bertc" train "$config" --device cpu --resume --checkpoint-dir "$dir" 2>"$dir.log" &
pid=$!
half_written() { compgen -G "$dir/.checkpoint-000006.safetensors.tmp.*" >/dev/null; }
for _ in $(seq 1 600); do half_written && break; sleep 0.1; done
if ! half_written; then
  kill -9 "$pid" 2>/dev/null || true
  echo "FAIL: no half-written checkpoint appeared within 60 s"
  exit 1
fi
kill -TERM "$pid"
sleep 0.5
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
echo "exit $rc"
grep "removed the half-written" "$dir.log" | sed "s|$dir/||"
if compgen -G "$dir/.checkpoint-*.tmp.*" >/dev/null; then echo "FAIL: the half-written checkpoint remains"; exit 1; fi
"$bertc" train "$config" --device cpu --resume --checkpoint-dir "$dir" 2>&1 | grep "resuming from" | sed "s|$dir/||"
echo "PASS"
