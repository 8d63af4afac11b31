#!/usr/bin/env bash
# The GPU check, run on the GPU machine from the repository root after tests/gpu/prepare.sh
# built .gpu/ here. So far: the CUDA driver and GPU are found through dlopen, NVRTC is found, the
# BERT graphs have exactly Hugging Face BertForPreTraining's parameters, and bertc eval (the CPU
# reference) gives transformers' losses and gradients (PyTorch and transformers are installed
# there), and bert-tiny trains on the GPU (--device cuda: every generated kernel and cuBLAS call
# of the step) with the CPU reference's losses, at fp32 (simt), fp16 and bf16 (tensor cores),
# after bertc check compared every kernel's values with the reference's;
# the step replayed as a CUDA Graph equals eager launches; then bench/gpu_bench.sh against PyTorch.
# Writes a summary to $OUT when set.
set -uo pipefail
out=${OUT:-$(mktemp -d)}
: >"$out/results.txt"
bin=${TMPDIR:-/tmp}/bertc-gpu-bin
failed=0
step() {  # step NAME COMMAND...: runs it, keeps its log, prints PASS/FAIL (also to results.txt) and the log's tail
  local name=$1 began=$SECONDS result; shift
  if "$@" >"$out/$name.log" 2>&1; then result=PASS; else result=FAIL; failed=1; fi
  echo "$result $name ($((SECONDS - began)) s)" | tee -a "$out/results.txt"
  tail -n 25 "$out/$name.log"
}
[ -f .gpu/bin/bertc.gz ] || { echo "no .gpu/bin/bertc.gz: run tests/gpu/prepare.sh on the build machine and carry .gpu"; exit 2; }
mkdir -p "$bin"  # prepare.sh compressed the programs to fit what travels with the tree
for f in .gpu/bin/*.gz; do gunzip -c "$f" >"$bin/$(basename "$f" .gz)" && chmod +x "$bin/$(basename "$f" .gz)"; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
step info "$bin/bertc" info
step driver_sees_gpu python3 tests/gpu/check_info.py "$bin/bertc"
# bertc finds cuBLAS by itself (loader path, beside NVRTC, the wheels' layout). If it does not,
# the step fails and the rest of the run uses the one PyTorch loads, so that one gap hides nothing.
cublas_found() { "$bin/bertc" info | grep -E '^cuBLAS +/'; }
step cublas_found cublas_found
if ! grep -q "^PASS cublas_found" "$out/results.txt"; then
  BERTC_CUBLAS=$(python3 -c 'import ctypes, torch, re
torch.mm(torch.ones(8, 8, device="cuda"), torch.ones(8, 8, device="cuda")).sum().item()
print(next(l.split()[-1] for l in open("/proc/self/maps") if re.search(r"libcublas\.so", l)))' 2>/dev/null) &&
    export BERTC_CUBLAS && echo "cuBLAS for the rest of the run: $BERTC_CUBLAS" | tee -a "$out/results.txt"
fi
step hf_parameter_parity python3 tests/parity/hf_param_parity.py "$bin/bertc" examples/bert-tiny.toml \
  examples/bert-base.toml examples/bert-large.toml
step hf_eval_parity python3 tests/parity/hf_eval_parity.py "$bin/bertc" examples/bert-tiny.toml /tmp/bertc-parity --device cuda
# Every kernel of a bert-tiny step and optimizer step on the GPU against the reference executor,
# value by value (bertc check lists any value beyond tolerance, the first marked: the kernel to
# look at when a training pair below fails).
step check_fp32_simt "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp32
step check_fp16 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision fp16
step check_bf16 "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul generated
step check_bf16_cublas "$bin/bertc" check examples/bert-tiny.toml --device cuda --precision bf16 --matmul library
# Training on the GPU against the CPU reference, 8 steps each: losses within 1e-3 relative
# (the Host device's test gets 1e-5; a GPU's FMA contraction and summation order add a little).
train_pair() {  # train_pair NAME FLAGS...
  local name=$1; shift
  rm -rf "/tmp/bertc-gpu-$name"
  "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --checkpoint-dir "/tmp/bertc-gpu-$name/cuda" "$@" &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cpu --checkpoint-dir "/tmp/bertc-gpu-$name/cpu" "$@" &&
    python3 tests/lit/Inputs/close_losses.py "/tmp/bertc-gpu-$name/cuda/metrics.jsonl" "/tmp/bertc-gpu-$name/cpu/metrics.jsonl" 1e-3
}
step train_cuda_fp32_simt train_pair fp32 --precision fp32
step train_cuda_fp16 train_pair fp16 --precision fp16
step train_cuda_bf16_cublas train_pair bf16 --precision bf16 --matmul library
# The step replayed as a CUDA Graph equals kernel-by-kernel launches, loss for loss.
graph_vs_eager() {
  rm -rf /tmp/bertc-gpu-graph
  "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --checkpoint-dir /tmp/bertc-gpu-graph/graph &&
    "$bin/bertc" train examples/bert-tiny.toml --steps 8 --device cuda --precision bf16 --eager --checkpoint-dir /tmp/bertc-gpu-graph/eager &&
    python3 tests/lit/Inputs/close_losses.py /tmp/bertc-gpu-graph/graph/metrics.jsonl /tmp/bertc-gpu-graph/eager/metrics.jsonl 0
}
step graph_equals_eager graph_vs_eager
# The benchmark: figures, not pass/fail (a failed run is reported and left out of the table).
step benchmark bench/gpu_bench.sh "$bin" "$out"
{ echo "gpu: $(cat "$out/gpu.txt")"; cat "$out/results.txt"; grep -h '^parity' "$out"/*.log; cat "$out/bench.md"; } \
  >"$out/summary.txt" 2>/dev/null
exit $failed
