#!/usr/bin/env bash
# The GPU check, run on the GPU machine from the repository root after tests/gpu/prepare.sh
# built .gpu/ here; one call learns everything a run can. The steps, their order and each one's
# share of the run's time are tests/gpu/steps.tsv: what has never executed and matters most first
# — the driver, GPUs, NVRTC, cuBLAS and NCCL found (bertc info against PyTorch's view); a tiny
# --device cuda training, its CUDA Graph against kernel-by-kernel launches; NCCL in the step's
# graph on one rank, and two ranks on this GPU and on the CPU; bertc check (every kernel of a
# bert-tiny step against the reference, value by value) of the P40's (sm_61) and V100's (sm_70)
# programs as PTX, then of this GPU's at each precision; training pairs (the GPU against the CPU
# reference), a compiled program, fine-tuning; then, optional, Hugging Face parity, the rest of
# the pairs, per-kernel profiles of a bert-base step, compute-sanitizer and the benchmark.
# Every step runs under its own limit (a hang costs its share, not the run) and the run goes on
# after a failure; the whole run stays within BERTC_GPU_BUDGET seconds (default 540): a step the
# budget cuts short, or that would start after it, says "cut by the budget", not TIMEOUT.
# $OUT (or a temporary folder) gets summary.txt (every step's result and seconds, the tail of each
# failure's log, parity and benchmark figures) and logs.tar.gz (every log, results.txt with each
# step's start), so that the two files that come back from the GPU machine hold everything.
# BERTC_GPU_STANDIN=usual (or hang:STEP) runs the schedule alone on a clock of its own: no step
# runs, each takes its usual_s from the table, STEP never ends (tests/gpu/schedule_test.py).
# BERTC_GPU_STEPS=REGEX runs only the steps whose names match it (a rerun of what failed, or of
# what the budget cut: e.g. 'benchmark'); the others are listed as "SKIP NAME (not asked)".
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$(mktemp -d)}
logs=$out/logs
mkdir -p "$logs"
: >"$out/results.txt"
bin=${TMPDIR:-/tmp}/bertc-gpu-bin
export bin
budget=${BERTC_GPU_BUDGET:-540}
standin=${BERTC_GPU_STANDIN:-}
asked=${BERTC_GPU_STEPS:-.}
failed=0

# The table: each step's limit, usual time and kind, in the order the steps must run.
declare -A limit_of usual_of
order=()
while IFS=$'\t' read -r name limit usual kind; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  limit_of[$name]=$limit usual_of[$name]=$usual
  order+=("$name")
done <"$here/steps.tsv"
next=0   # the index in `order` of the step due: steps run in the table's order
clock=0  # the stand-in's seconds
now() { if [ -n "$standin" ]; then echo "$clock"; else echo "$SECONDS"; fi; }

# step NAME COMMAND...: runs it within its share (steps.tsv) and what is left of the budget, keeps
# its log, records its START and PASS / FAIL / TIMEOUT / CUT BY THE BUDGET / SKIP.
step() {
  local name=$1 began result rc limit cut=0 takes; shift
  if [ -z "${limit_of[$name]:-}" ]; then echo "run.sh: step $name is not in steps.tsv" >&2; exit 2; fi
  if [ "${order[$next]:-}" != "$name" ]; then
    echo "run.sh: step $name runs where steps.tsv has ${order[$next]:-no step}: keep the two in one order" >&2; exit 2
  fi
  next=$((next + 1))
  if ! [[ "$name" =~ $asked ]]; then
    echo "SKIP $name (not asked: BERTC_GPU_STEPS=$asked)" >>"$out/results.txt"
    return
  fi
  began=$(now)
  limit=${limit_of[$name]}
  if ((began + 5 > budget)); then
    echo "SKIP $name (cut by the budget: the run's $budget s are spent)" | tee -a "$out/results.txt"
    return
  fi
  if ((limit > budget - began)); then limit=$((budget - began)) cut=1; fi
  echo "START $name at $began s (limit $limit s)" >>"$out/results.txt"
  if [ -n "$standin" ]; then
    takes=${usual_of[$name]}
    [ "$standin" = "hang:$name" ] && takes=999999
    if ((takes > limit)); then rc=124 takes=$limit; else rc=0; fi
    clock=$((clock + takes))
  else
    # Through bash, so that a step may be one of the functions below (each exported).
    timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1
    rc=$?
  fi
  if ((rc == 0)); then result=PASS
  elif ((rc == 124 || rc == 137)) && ((cut)); then result="CUT BY THE BUDGET after $limit s"; failed=1
  elif ((rc == 124 || rc == 137)); then result="TIMEOUT after $limit s (its share in steps.tsv)"; failed=1
  else result="FAIL (exit $rc)"; failed=1; fi
  echo "$result $name ($(($(now) - began)) s)" | tee -a "$out/results.txt"
  [ "$result" = PASS ] || [ -n "$standin" ] || tail -n 25 "$logs/$name.log"
}

if [ -z "$standin" ]; then
  [ -f .gpu/bin/bertc.xz ] || { echo "no .gpu/bin/bertc.xz: run tests/gpu/prepare.sh on the build machine and carry .gpu"; exit 2; }
  mkdir -p "$bin"  # prepare.sh compressed the programs to fit what travels with the tree
  for f in .gpu/bin/*.xz; do
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      "$f" "$bin/$(basename "$f" .xz)" && chmod +x "$bin/$(basename "$f" .xz)"
  done
  # CUDA 12's NVRTC (prepare.sh) in lib/ beside bertc: the P40's and V100's programs as PTX.
  mkdir -p "$bin/lib"
  [ -f .gpu/nvrtc-cu12.tar.xz ] && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    .gpu/nvrtc-cu12.tar.xz "$bin/lib"
  # The dynamic bundle (prepare.sh): the regular build's bertc, with Gloo, through its own loader.
  if [ -f .gpu/dynamic.tar.xz ]; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/dynamic.tar.xz "$bin" &&
      printf '#!/bin/sh\nexec "%s/lib/ld-linux-x86-64.so.2" --library-path "%s/lib" "%s/bertc" "$@"\n' \
        "$bin/dynamic" "$bin/dynamic" "$bin/dynamic" >"$bin/bertc-dynamic" && chmod +x "$bin/bertc-dynamic"
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
else
  echo "stand-in ($standin): no GPU, no step runs" >"$out/gpu.txt"
fi
cat "$out/gpu.txt"

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

# Rows of several examples ([train] packing = "pack", issue 39) trained on the GPU against the
# CPU reference as train_pair does: the attention kernels that skip the tiles between examples,
# the pooler and NSP head on each example's [CLS], with this GPU's default precision.
rows_pair() {
  rm -rf /tmp/bertc-gpu-rows
  sed 's/^\[train\]$/[train]\npacking = "pack"/' examples/bert-tiny.toml >"$out/bert-tiny-rows.toml" &&
    for device in cuda cpu; do
      "$bin/bertc" train "$out/bert-tiny-rows.toml" --data examples/data/corpus.txt --vocab examples/data/vocab.txt \
        --steps 8 --device $device --checkpoint-dir "/tmp/bertc-gpu-rows/$device" || return 1
    done &&
    python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-rows/cuda/metrics.jsonl /tmp/bertc-gpu-rows/cpu/metrics.jsonl 1e-3
}
export -f rows_pair

# The step replayed as a CUDA Graph equals kernel-by-kernel launches, loss for loss.
graph_vs_eager() {
  rm -rf /tmp/bertc-gpu-graph
  "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --checkpoint-dir /tmp/bertc-gpu-graph/graph &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --eager --checkpoint-dir /tmp/bertc-gpu-graph/eager &&
    python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-graph/graph/metrics.jsonl /tmp/bertc-gpu-graph/eager/metrics.jsonl 0
}
export -f graph_vs_eager

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

# NCCL on one rank inside the CUDA Graph: [train] allreduce = "nccl" sums every bucket over the
# one rank on a second stream of the step's graph (forked after the launch that writes the
# bucket, joined before the updates) — with one micro-batch in the one graph of step and
# optimizer, with two only in the last micro-batch's graph — and training must equal the run
# without NCCL bit for bit: the losses and every tensor of the last checkpoint. NCCL enqueues
# nothing for an in-place sum on one rank, so BERTC_NCCL_ONE_RANK_WORK=1 makes the sums ncclAvg,
# which NCCL runs on one rank as a kernel scaling by 1/1 (the identity, exactly): the graphs the
# run records (said on its "graph: recorded" lines, counted by cuGraphGetNodes) must hold more
# kernels than the plain run's — NCCL's, captured and replayed. What it does not prove: a sum
# over two GPUs, which one GPU cannot hold. NCCL from PyTorch's wheel when BERTC_NCCL is unset.
graph_kernels() {  # graph_kernels LOG: the kernels of every device graph the run recorded
  sed -n 's/^graph: recorded one device graph of [0-9]* nodes*: \([0-9]*\) kernels*.*/\1/p' "$1" | awk '{s += $1} END {print s + 0}'
}
export -f graph_kernels
nccl_one_rank() {
  local accumulation=$1 dir=/tmp/bertc-gpu-nccl-$1
  rm -rf "$dir" && mkdir -p "$dir"
  [ -n "${BERTC_NCCL:-}" ] || export BERTC_NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  sed -e "s/^gradient_accumulation_steps = .*/gradient_accumulation_steps = $accumulation/" examples/bert-tiny.toml >"$dir/plain.toml"
  sed -e 's/^\[train\]$/[train]\nallreduce = "nccl"/' "$dir/plain.toml" >"$dir/nccl.toml"
  local data=(--data examples/data/corpus.txt --vocab examples/data/vocab.txt --steps 6 --device cuda --precision bf16)
  "$bin/bertc" train "$dir/plain.toml" "${data[@]}" --checkpoint-dir "$dir/plain" >"$dir/plain.log" 2>&1
  local plain_rc=$?
  BERTC_NCCL_ONE_RANK_WORK=1 "$bin/bertc" train "$dir/nccl.toml" "${data[@]}" --checkpoint-dir "$dir/nccl" >"$dir/nccl.log" 2>&1
  local nccl_rc=$?
  cat "$dir/plain.log" "$dir/nccl.log"
  ((plain_rc == 0 && nccl_rc == 0)) || return 1
  grep -q "summed by NCCL" "$dir/nccl.log" || return 1
  local plain_kernels nccl_kernels
  plain_kernels=$(graph_kernels "$dir/plain.log") nccl_kernels=$(graph_kernels "$dir/nccl.log")
  echo "graph kernels: plain $plain_kernels, with NCCL $nccl_kernels"
  ((plain_kernels > 0 && nccl_kernels > plain_kernels)) || { echo "no NCCL kernel was captured"; return 1; }
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

# Optional and slow. compute-sanitizer: any report fails the step (--error-exitcode).
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
sanitize() {  # sanitize TOOL COMMAND...
  local tool=$1; shift
  [ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; return 1; }
  "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 "$@"
}
export sanitizer
export -f sanitize

# 1. Found: the driver, every GPU, an NVRTC for it, cuBLAS and NCCL (bertc info against torch).
step info "$bin/bertc" info
step driver_sees_gpu python3 tests/gpu/check_info.py "$bin/bertc"
# bertc finds cuBLAS by itself (support/library_search.h: toolkits, Python wheels...). If not,
# the step fails and the rest of the run uses the one PyTorch loads, so that one gap hides nothing.
cublas_found() { "$bin/bertc" info | grep -E '^cuBLAS +[0-9]+\.[0-9]+ /'; }
export -f cublas_found
step cublas_found cublas_found
if [ -z "$standin" ] && ! grep -q "^PASS cublas_found" "$out/results.txt"; then
  BERTC_CUBLAS=$(python3 -c 'import torch, re
torch.mm(torch.ones(8, 8, device="cuda"), torch.ones(8, 8, device="cuda")).sum().item()
print(next(l.split()[-1] for l in open("/proc/self/maps") if re.search(r"libcublas\.so", l)))' 2>/dev/null) &&
    export BERTC_CUBLAS && echo "cuBLAS for the rest of the run: $BERTC_CUBLAS" | tee -a "$out/results.txt"
fi

# 2. A tiny --device cuda training: the step's CUDA Graph against kernel-by-kernel launches; the
# README's main job as a user runs it (--device auto takes this GPU, and says so).
step graph_equals_eager graph_vs_eager
main_job_on_gpu() {
  rm -rf /tmp/bertc-gpu-main
  "$bin/bertc" train examples/bert-tiny.toml --steps 20 --checkpoint-dir /tmp/bertc-gpu-main 2>&1 | tee /tmp/bertc-gpu-main.log &&
    grep -E "^device: .* \(--device auto: cuda" /tmp/bertc-gpu-main.log >/dev/null
}
export -f main_job_on_gpu
step main_job_on_gpu main_job_on_gpu
# 3. NCCL in the step's graph, and two ranks (both on this GPU, and on the CPU).
step nccl_one_rank_in_graph nccl_one_rank 1
step nccl_one_rank_fp16 nccl_one_rank_fp16
step two_ranks_cuda_one_gpu two_ranks equal_cuda_env
step two_ranks_cpu two_ranks equal_env
# 4. Every kernel against the reference, value by value (bertc check lists any value beyond
# tolerance, the first marked): the P40's (sm_61: SIMT FP32) and V100's (sm_70: mma.m8n8k4)
# programs first, as PTX that the driver compiles for this GPU, then this GPU's own at each
# precision, and LAMB's optimizer kernels. BERTC_SYNC_LAUNCHES names a kernel that faults.
export BERTC_SYNC_LAUNCHES=1
step check_p40_program_as_ptx "$bin/bertc" check examples/bert-tiny.toml --device cuda --arch sm_61 --precision fp32
step check_v100_program_as_ptx "$bin/bertc" check examples/bert-tiny.toml --device cuda --arch sm_70 --precision fp16
step check_fp32_simt "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
step check_bf16 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul generated
step check_bf16_cublas "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul library
step check_fp16 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp16
step check_tf32 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision tf32 --matmul generated
sed 's/optimizer = "adamw"/optimizer = "lamb"/' examples/bert-tiny.toml >"$out/bert-tiny-lamb.toml"
step check_lamb "$bin/bertc" check "$out/bert-tiny-lamb.toml" --device cuda --precision fp32
sed 's/^\[train\]$/[train]\npacking = "pack"/' examples/bert-tiny.toml >"$out/bert-tiny-rows-check.toml"
step check_rows_bf16 "$bin/bertc" check "$out/bert-tiny-rows-check.toml" --device cuda --precision bf16 --matmul generated
step check_rows_p40_program_as_ptx "$bin/bertc" check "$out/bert-tiny-rows-check.toml" --device cuda --arch sm_61 \
  --precision fp32
unset BERTC_SYNC_LAUNCHES
# 5. Training on the GPU against the CPU reference; a compiled program; fine-tuning.
step train_cuda_bf16_cublas train_pair bf16 --precision bf16 --matmul library
step train_p40_program_as_ptx train_pair p40 --arch sm_61 --precision fp32
step compiled_program_runs_as_compiled compiled_program
step finetune_cuda finetune_pair
step train_rows_pair rows_pair
# 6. Optional, in what is left: the scenarios CI runs on bertc's emulated CUDA driver, here on this
# GPU's driver and cuBLAS (tests/cuda_emulation/train_on_emulated_cuda.py: each emulated GPU's
# kernels as PTX for its arch, against the CPU reference), so that the first GPU run compares
# with what emulation gave; Hugging Face parity, the rest of the checks and pairs, profiles,
# sanitizers, the benchmark (figures, not pass/fail).
step emulation_scenarios_on_gpu python3 tests/cuda_emulation/train_on_emulated_cuda.py "$bin/bertc" system system . \
  /tmp/bertc-gpu-emulation-scenarios
step hf_parameter_parity python3 tests/parity/hf_param_parity.py "$bin/bertc" examples/bert-tiny.toml \
  examples/bert-base.toml examples/bert-large.toml
step hf_eval_parity python3 tests/parity/hf_eval_parity.py "$bin/bertc" examples/bert-tiny.toml /tmp/bertc-parity --device cuda
step hf_finetune_parity python3 tests/parity/hf_finetune_parity.py "$bin/bertc" examples/bert-tiny.toml /tmp/bertc-parity-ft --device cuda
step hf_export_parity python3 tests/parity/hf_export_parity.py "$bin/bertc" . /tmp/bertc-parity-export
step check_tf32_cublas "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision tf32 --matmul library
step nccl_one_rank_accumulating nccl_one_rank 2
step train_cuda_fp32_simt train_pair fp32 --precision fp32
step train_cuda_fp16 train_pair fp16 --precision fp16
step profile_base_bf16 profile_base bf16 --precision bf16
step profile_base_p40_fp32_simt profile_base p40-fp32 --arch sm_61 --precision fp32
step sanitize_memcheck_check_fp32 sanitize memcheck "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
step sanitize_memcheck_train_bf16 sanitize memcheck "$bin/bertc" train examples/bert-tiny.toml --steps 3 --device cuda \
  --precision bf16 --checkpoint-dir /tmp/bertc-gpu-sanitize
for tool in racecheck synccheck initcheck; do
  step "sanitize_${tool}_check_fp32" sanitize "$tool" "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
done
step benchmark bench/gpu_bench.sh "$bin" "$logs"
if ((next != ${#order[@]})); then echo "run.sh: steps.tsv has ${order[$next]}, which no step runs" >&2; exit 2; fi

{
  echo "gpu: $(cat "$out/gpu.txt")"
  grep -v '^START ' "$out/results.txt"
  grep -h '^parity' "$logs"/*.log 2>/dev/null
  cat "$logs/bench.md" 2>/dev/null
  for log in "$logs"/profile_*.log; do  # each profile's slowest launches and its per-family totals
    [ -f "$log" ] || continue
    echo; echo "=== $(basename "$log" .log) ==="
    sed -n '/^profile of step/,/^profile:/p' "$log" | head -n 60
  done
  for log in "$logs"/*.log; do
    [ -f "$log" ] || continue
    name=$(basename "$log" .log)
    grep -qE "^(FAIL|TIMEOUT|CUT).* $name \(" "$out/results.txt" || continue
    echo; echo "=== $name (last 40 lines; all of it in logs.tar.gz) ==="; tail -n 40 "$log"
  done
} >"$out/summary.txt"
tar -czf "$out/logs.tar.gz" -C "$out" logs gpu.txt results.txt && rm -rf "$logs"
echo "summary: $out/summary.txt ($(now) s in all)"
exit $failed
