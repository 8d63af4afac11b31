#!/usr/bin/env bash
# The GPU check, run on the GPU machine from the repository root after tests/gpu/prepare.sh
# built .gpu/ here; one call learns everything a run can: every step runs under its own time
# limit and the run goes on after a failure. Steps, cheapest and most telling first:
#   the driver, GPUs, NVRTC and cuBLAS found (bertc info against PyTorch's view);
#   Hugging Face parity (parameters, eval losses and gradients of the CPU reference, the
#     fine-tuning heads, exported folders loaded by transformers);
#   bertc check (every kernel of a bert-tiny step and optimizer step against the reference, value
#     by value) at fp32 (simt), fp16, bf16 generated and through cuBLAS, then with the P40's
#     (sm_61) and V100's (sm_70) programs run on this GPU as PTX, and LAMB's optimizer kernels;
#   training pairs (8 steps on the GPU against the CPU reference), the CUDA Graph against eager;
#   a compiled program (.bertx) trained with NVRTC unreachable against the config, bit for bit;
#   fine-tuning (every length bucket's step and evaluation graph) against the CPU reference;
#   NCCL on one rank in the step's CUDA Graph against no exchange, bit for bit (and with fp16
#     compression: our rounding kernels around its sum, within 1e-3);
#   two ranks (Gloo) on the CPU and on this GPU against one rank of twice the accumulation;
#   per-kernel profiles of a bert-base step (bf16, and the P40's FP32 SIMT program as PTX);
#   optional, slowest last: compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on
#     bertc check and a short training run, then the benchmark against PyTorch.
# The whole run stays within BERTC_GPU_BUDGET seconds (default 540): a step that would start
# after that is skipped and said so. $OUT (or a temporary folder) gets summary.txt (every step's
# result and time, the tail of each failure's log, parity and benchmark figures) and logs.tar.gz
# (every log), so that the two files that come back from the GPU machine hold everything.
set -uo pipefail
out=${OUT:-$(mktemp -d)}
logs=$out/logs
mkdir -p "$logs"
: >"$out/results.txt"
bin=${TMPDIR:-/tmp}/bertc-gpu-bin
export bin
budget=${BERTC_GPU_BUDGET:-540}
failed=0
step() {  # step NAME SECONDS COMMAND...: runs it within SECONDS, keeps its log, records PASS/FAIL/TIMEOUT/SKIP
  local name=$1 limit=$2 began=$SECONDS result rc; shift 2
  if ((SECONDS + 5 > budget)); then
    echo "SKIP $name (the run's $budget s are spent)" | tee -a "$out/results.txt"
    return
  fi
  ((limit > budget - SECONDS)) && limit=$((budget - SECONDS))
  # Through bash, so that a step may be one of the functions below (each exported).
  timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  if ((rc == 0)); then result=PASS; elif ((rc == 124 || rc == 137)); then result="TIMEOUT after $limit s"; failed=1
  else result="FAIL (exit $rc)"; failed=1; fi
  echo "$result $name ($((SECONDS - began)) s)" | tee -a "$out/results.txt"
  [ "$result" = PASS ] || tail -n 25 "$logs/$name.log"
}
[ -f .gpu/bin/bertc.gz ] || { echo "no .gpu/bin/bertc.gz: run tests/gpu/prepare.sh on the build machine and carry .gpu"; exit 2; }
mkdir -p "$bin"  # prepare.sh compressed the programs to fit what travels with the tree
for f in .gpu/bin/*.gz; do gunzip -c "$f" >"$bin/$(basename "$f" .gz)" && chmod +x "$bin/$(basename "$f" .gz)"; done
# The dynamic bundle (prepare.sh): the regular build's bertc, with Gloo, through its own loader.
if [ -f .gpu/dynamic.tar.xz ]; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/dynamic.tar.xz "$bin" &&
    printf '#!/bin/sh\nexec "%s/lib/ld-linux-x86-64.so.2" --library-path "%s/lib" "%s/bertc" "$@"\n' \
      "$bin/dynamic" "$bin/dynamic" "$bin/dynamic" >"$bin/bertc-dynamic" && chmod +x "$bin/bertc-dynamic"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

step info 30 "$bin/bertc" info
step driver_sees_gpu 60 python3 tests/gpu/check_info.py "$bin/bertc"
# bertc finds cuBLAS by itself (loader path, beside NVRTC, the wheels' layout). If it does not,
# the step fails and the rest of the run uses the one PyTorch loads, so that one gap hides nothing.
cublas_found() { "$bin/bertc" info | grep -E '^cuBLAS +/'; }
export -f cublas_found
step cublas_found 30 cublas_found
if ! grep -q "^PASS cublas_found" "$out/results.txt"; then
  BERTC_CUBLAS=$(python3 -c 'import torch, re
torch.mm(torch.ones(8, 8, device="cuda"), torch.ones(8, 8, device="cuda")).sum().item()
print(next(l.split()[-1] for l in open("/proc/self/maps") if re.search(r"libcublas\.so", l)))' 2>/dev/null) &&
    export BERTC_CUBLAS && echo "cuBLAS for the rest of the run: $BERTC_CUBLAS" | tee -a "$out/results.txt"
fi
step hf_parameter_parity 90 python3 tests/parity/hf_param_parity.py "$bin/bertc" examples/bert-tiny.toml \
  examples/bert-base.toml examples/bert-large.toml
step hf_eval_parity 90 python3 tests/parity/hf_eval_parity.py "$bin/bertc" examples/bert-tiny.toml /tmp/bertc-parity --device cuda
step hf_finetune_parity 90 python3 tests/parity/hf_finetune_parity.py "$bin/bertc" examples/bert-tiny.toml /tmp/bertc-parity-ft --device cuda
step hf_export_parity 90 python3 tests/parity/hf_export_parity.py "$bin/bertc" . /tmp/bertc-parity-export

# Every kernel of a bert-tiny step and optimizer step on the GPU against the reference executor,
# value by value (bertc check lists any value beyond tolerance, the first marked: the kernel to
# look at when a training pair below fails). BERTC_SYNC_LAUNCHES names a kernel that faults.
export BERTC_SYNC_LAUNCHES=1
step check_fp32_simt 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
step check_fp16 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp16
step check_bf16 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul generated
step check_bf16_cublas 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul library
step check_tf32 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision tf32 --matmul generated
step check_tf32_cublas 60 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision tf32 --matmul library
# The programs our P40 (sm_61: SIMT FP32) and V100 (sm_70: mma.m8n8k4) users run, on this GPU:
# compiled to PTX, which the driver compiles for the GPU present when it loads it.
step check_p40_program_as_ptx 90 "$bin/bertc" check examples/bert-tiny.toml --device cuda --arch sm_61 --precision fp32
step check_v100_program_as_ptx 90 "$bin/bertc" check examples/bert-tiny.toml --device cuda --arch sm_70 --precision fp16
# LAMB's three optimizer kernels (lower-lamb: per-tensor norms summed across blocks, trust ratio);
# bertc check runs on synthetic batches, so the config may live anywhere.
sed 's/optimizer = "adamw"/optimizer = "lamb"/' examples/bert-tiny.toml >"$out/bert-tiny-lamb.toml"
step check_lamb 60 "$bin/bertc" check "$out/bert-tiny-lamb.toml" --device cuda --precision fp32
unset BERTC_SYNC_LAUNCHES

# Training on the GPU against the CPU reference, 8 steps each: losses within 1e-3 relative
# (the Host device's test gets 1e-5; a GPU's FMA contraction and summation order add a little).
train_pair() {  # train_pair NAME FLAGS...
  local name=$1; shift
  rm -rf "/tmp/bertc-gpu-$name"
  "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --checkpoint-dir "/tmp/bertc-gpu-$name/cuda" "$@" &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cpu --checkpoint-dir "/tmp/bertc-gpu-$name/cpu" "$@" &&
    python3 tests/lit/Inputs/close_losses.py "/tmp/bertc-gpu-$name/cuda/metrics.jsonl" "/tmp/bertc-gpu-$name/cpu/metrics.jsonl" 1e-3
}
export -f train_pair
step train_cuda_fp32_simt 90 train_pair fp32 --precision fp32
step train_cuda_fp16 90 train_pair fp16 --precision fp16
step train_cuda_bf16_cublas 90 train_pair bf16 --precision bf16 --matmul library
step train_p40_program_as_ptx 90 train_pair p40 --arch sm_61 --precision fp32
# The step replayed as a CUDA Graph equals kernel-by-kernel launches, loss for loss.
graph_vs_eager() {
  rm -rf /tmp/bertc-gpu-graph
  "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --checkpoint-dir /tmp/bertc-gpu-graph/graph &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --eager --checkpoint-dir /tmp/bertc-gpu-graph/eager &&
    python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-graph/graph/metrics.jsonl /tmp/bertc-gpu-graph/eager/metrics.jsonl 0
}
export -f graph_vs_eager
step graph_equals_eager 90 graph_vs_eager
# A compiled program (bertc compile -o FILE.bertx) on the GPU: its images loaded, NVRTC made
# unreachable, the same losses bit for bit as training from the config (the same kernels); its
# kernels checked value by value; a program for another arch refused (cubins run on their own).
compiled_program() {
  rm -rf /tmp/bertc-gpu-bertx && mkdir -p /tmp/bertc-gpu-bertx
  "$bin/bertc" compile examples/bert-tiny.toml --precision bf16 -o /tmp/bertc-gpu-bertx/tiny.bertx &&
    BERTC_NVRTC=/nonexistent XDG_CACHE_HOME=/tmp/bertc-gpu-bertx/empty-cache "$bin/bertc" train \
      /tmp/bertc-gpu-bertx/tiny.bertx --steps 8 --device cuda --data examples/data/corpus.txt \
      --vocab examples/data/vocab.txt --checkpoint-dir /tmp/bertc-gpu-bertx/compiled &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --checkpoint-dir /tmp/bertc-gpu-bertx/config &&
    python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-bertx/compiled/metrics.jsonl /tmp/bertc-gpu-bertx/config/metrics.jsonl 0 &&
    BERTC_NVRTC=/nonexistent "$bin/bertc" check /tmp/bertc-gpu-bertx/tiny.bertx --device cuda &&
    "$bin/bertc" compile examples/bert-tiny.toml --arch sm_80 --precision bf16 -o /tmp/bertc-gpu-bertx/a100.bertx &&
    { "$bin/bertc" train /tmp/bertc-gpu-bertx/a100.bertx --steps 1 --device cuda --data examples/data/corpus.txt \
        --vocab examples/data/vocab.txt --checkpoint-dir /tmp/bertc-gpu-bertx/refused 2>&1 || true; } | tee /dev/stderr |
      grep "the program was compiled for sm_80 and this GPU" > /dev/null
}
export -f compiled_program
step compiled_program_runs_as_compiled 120 compiled_program

# Fine-tuning on the GPU against the CPU reference: every bucket's step graph and the evaluation
# graphs compiled for the GPU; the losses within 1e-3 relative, as training's.
finetune_pair() {
  rm -rf /tmp/bertc-gpu-ft && mkdir -p /tmp/bertc-gpu-ft
  head -n 81 examples/data/task/train.tsv > /tmp/bertc-gpu-ft/train.tsv
  head -n 41 examples/data/task/dev.tsv > /tmp/bertc-gpu-ft/dev.tsv
  for device in cuda cpu; do
    "$bin/bertc" finetune tests/lit/Inputs/finetune-test.toml --device $device --train-data /tmp/bertc-gpu-ft/train.tsv \
      --dev-data /tmp/bertc-gpu-ft/dev.tsv --checkpoint-dir /tmp/bertc-gpu-ft/$device || return 1
  done
  python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-ft/cuda/metrics.jsonl /tmp/bertc-gpu-ft/cpu/metrics.jsonl 1e-3
}
export -f finetune_pair
step finetune_cuda 120 finetune_pair

# NCCL on one rank inside the CUDA Graph: [train] allreduce = "nccl" sums every bucket over the
# one rank on a second stream of the step's graph (forked after the launch that writes the
# bucket, joined before the updates) — with one micro-batch in the one graph of step and
# optimizer, with two only in the last micro-batch's graph — and training must equal the run
# without NCCL bit for bit: the losses and every tensor of the last checkpoint. What it proves:
# NCCL loads, joins, and its calls, the fork and the join are captured and replayed. Not the sum
# itself: NCCL enqueues nothing for an in-place sum on one rank, and one GPU cannot hold two
# ranks; that takes a machine with two GPUs. NCCL from PyTorch's wheel when BERTC_NCCL is unset.
nccl_one_rank() {
  local accumulation=$1 dir=/tmp/bertc-gpu-nccl-$1
  rm -rf "$dir" && mkdir -p "$dir"
  [ -n "${BERTC_NCCL:-}" ] || export BERTC_NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  sed -e "s/^gradient_accumulation_steps = .*/gradient_accumulation_steps = $accumulation/" examples/bert-tiny.toml >"$dir/plain.toml"
  sed -e 's/^\[train\]$/[train]\nallreduce = "nccl"/' "$dir/plain.toml" >"$dir/nccl.toml"
  local data=(--data examples/data/corpus.txt --vocab examples/data/vocab.txt --steps 6 --device cuda --precision bf16)
  "$bin/bertc" train "$dir/plain.toml" "${data[@]}" --checkpoint-dir "$dir/plain" &&
    "$bin/bertc" train "$dir/nccl.toml" "${data[@]}" --checkpoint-dir "$dir/nccl" 2>&1 | tee "$dir/nccl.log" &&
    grep -q "summed by NCCL" "$dir/nccl.log" &&
    python3 tests/lit/Inputs/close_losses.py "$dir/nccl/metrics.jsonl" "$dir/plain/metrics.jsonl" 0 &&
    python3 -c '
import sys
from safetensors.numpy import load_file
a, b = (load_file(f"{sys.argv[1]}/{run}/checkpoint-000006.safetensors") for run in ("nccl", "plain"))
assert a.keys() == b.keys(), "the checkpoints hold other tensors"
differ = [k for k in a if a[k].tobytes() != b[k].tobytes()]
assert not differ, f"{len(differ)} tensors differ, e.g. {differ[:3]}"
print(f"NCCL one rank: {len(a)} tensors equal bit for bit")' "$dir"
}
export -f nccl_one_rank
step nccl_one_rank_in_graph 90 nccl_one_rank 1
step nccl_one_rank_accumulating 90 nccl_one_rank 2
# fp16 compression on NCCL's path: each gradient rounded to fp16 by our kernel into the bucket's
# buffer, NCCL's (empty, one rank) sum of it, widened back before the updates, all in the graph.
# One rank's gradients only lose precision: the losses stay within 1e-3 of the plain run's (what
# bf16 training's pairs allow); a wrong offset or a missed widening moves them by far more.
nccl_one_rank_fp16() {
  local dir=/tmp/bertc-gpu-nccl-fp16
  rm -rf "$dir" && mkdir -p "$dir"
  [ -n "${BERTC_NCCL:-}" ] || export BERTC_NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  sed -e 's/^\[train\]$/[train]\nallreduce = "nccl"\ngradient_compression = "fp16"/' examples/bert-tiny.toml >"$dir/fp16.toml"
  local data=(--steps 6 --device cuda --precision bf16)
  "$bin/bertc" train examples/bert-tiny.toml "${data[@]}" --checkpoint-dir "$dir/plain" &&
    "$bin/bertc" train "$dir/fp16.toml" "${data[@]}" --data examples/data/corpus.txt --vocab examples/data/vocab.txt \
      --checkpoint-dir "$dir/fp16" 2>&1 | tee "$dir/fp16.log" &&
    grep -q "rounded to fp16 on the device and summed by NCCL" "$dir/fp16.log" &&
    python3 tests/lit/Inputs/close_losses.py "$dir/fp16/metrics.jsonl" "$dir/plain/metrics.jsonl" 1e-3
}
export -f nccl_one_rank_fp16
step nccl_one_rank_fp16 90 nccl_one_rank_fp16

# Two ranks as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR: Gloo, in the dynamic bundle;
# this machine has no mpirun of ours), against one rank of twice the accumulation: on the CPU
# reference, the run CI makes; then both ranks on this one GPU, their gradients staged through
# host memory and summed over Gloo. tests/distributed/dp_test.py says what each case asserts.
# (Two steps only: the run's 540 s are shared with everything else.)
two_ranks() {  # two_ranks CASE
  [ -x "$bin/bertc-dynamic" ] || { echo "no .gpu/dynamic.tar.xz: run tests/gpu/prepare.sh"; return 1; }
  python3 tests/distributed/dp_test.py "$1" "$bin/bertc-dynamic" . /tmp/bertc-gpu-dp
}
export -f two_ranks
step two_ranks_cpu 90 two_ranks equal_env
step two_ranks_cuda_one_gpu 90 two_ranks equal_cuda_env

# Per-kernel profiles of one bert-base step (the third: the first sets cuBLAS up, the second
# records the graph): bf16 with this GPU's kernels, and the P40's FP32 SIMT program as PTX. What
# the next kernel work is chosen from; the JSON comes back beside the summary.
profile_base() {  # profile_base NAME FLAGS...
  local name=$1; shift
  "$bin/bertc" train examples/bert-base.toml --device cuda --steps 3 --profile 3 --profile-out "$out/profile-$name.json" \
    --checkpoint-dir "/tmp/bertc-gpu-profile-$name" "$@"
}
export out
export -f profile_base
step profile_base_bf16 120 profile_base bf16 --precision bf16
step profile_base_p40_fp32_simt 150 profile_base p40-fp32 --arch sm_61 --precision fp32

# Optional and slow. compute-sanitizer: any report fails the step (--error-exitcode).
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
sanitize() {  # sanitize TOOL COMMAND...
  local tool=$1; shift
  [ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; return 1; }
  "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 "$@"
}
export sanitizer
export -f sanitize
for tool in memcheck racecheck synccheck initcheck; do
  step "sanitize_${tool}_check_fp32" 60 sanitize "$tool" "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
  step "sanitize_${tool}_check_bf16" 60 sanitize "$tool" "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16
done
step sanitize_memcheck_train_bf16 90 sanitize memcheck "$bin/bertc" train examples/bert-tiny.toml --steps 3 --device cuda \
  --precision bf16 --checkpoint-dir /tmp/bertc-gpu-sanitize
# The benchmark: figures, not pass/fail (a failed run is reported and left out of the table).
step benchmark 240 bench/gpu_bench.sh "$bin" "$logs"

{
  echo "gpu: $(cat "$out/gpu.txt")"
  cat "$out/results.txt"
  grep -h '^parity' "$logs"/*.log 2>/dev/null
  cat "$logs/bench.md" 2>/dev/null
  for log in "$logs"/profile_*.log; do  # each profile's slowest launches and its per-family totals
    [ -f "$log" ] || continue
    echo; echo "=== $(basename "$log" .log) ==="
    sed -n '/^profile of step/,/^profile:/p' "$log" | head -n 60
  done
  for log in "$logs"/*.log; do
    name=$(basename "$log" .log)
    grep -qE "^(FAIL|TIMEOUT).* $name \(" "$out/results.txt" || continue
    echo; echo "=== $name (last 40 lines; all of it in logs.tar.gz) ==="; tail -n 40 "$log"
  done
} >"$out/summary.txt"
tar -czf "$out/logs.tar.gz" -C "$out" logs gpu.txt results.txt && rm -rf "$logs"
echo "summary: $out/summary.txt ($SECONDS s in all)"
exit $failed
