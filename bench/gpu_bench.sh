#!/usr/bin/env bash
# The side-by-side benchmark on a GPU: BERT-base and BERT-large pretraining steps at seq 128,
# bertc against PyTorch eager (bf16 autocast) and torch.compile, and the FP32 path with tensor
# cores off on both sides (bertc's own SIMT kernels, --matmul generated; PyTorch without TF32),
# the stand-in for a P40. Same batch, same GPU, one run. Writes every result as a JSON line to
# $out/bench.jsonl and the table (bench/compare.py) to $out/bench.md.
#
#   bench/gpu_bench.sh BIN_DIR OUT_DIR [BATCH]      (BIN_DIR holds bertc-bench-train)
# BENCH_ONLY=REGEX measures only the labels (e.g. bert-large-fp32-bertc) that match it.
set -uo pipefail
bin=$1 out=$2 batch=${3:-32}
steps=${BENCH_STEPS:-20} warmup=${BENCH_WARMUP:-3}
mkdir -p "$out"
results=$out/bench.jsonl
: >"$results"
measure() {  # measure LABEL COMMAND...: appends its JSON line, keeps its log
  local label=$1; shift
  [[ "$label" =~ ${BENCH_ONLY:-.} ]] || return 0
  echo "bench: $label" >&2
  if "$@" >"$out/bench-$label.out" 2>"$out/bench-$label.log"; then
    grep '^{' "$out/bench-$label.out" >>"$results"
  else
    echo "bench: $label failed:" >&2; tail -n 5 "$out/bench-$label.log" >&2
  fi
}
for model in bert-base bert-large; do
  config=examples/$model.toml
  common=(--batch-size "$batch" --seq-len 128 --steps "$steps" --warmup "$warmup")
  measure "$model-bf16-bertc" "$bin/bertc-bench-train" "$config" --precision bf16 "${common[@]}"
  measure "$model-bf16-eager" python3 bench/torch_baseline.py "$config" --precision bf16 --mode eager "${common[@]}"
  measure "$model-bf16-compile" python3 bench/torch_baseline.py "$config" --precision bf16 --mode compile "${common[@]}"
  measure "$model-fp32-bertc" "$bin/bertc-bench-train" "$config" --precision fp32 --matmul generated "${common[@]}"
  measure "$model-fp32-eager" python3 bench/torch_baseline.py "$config" --precision fp32 --mode eager "${common[@]}"
done
python3 bench/compare.py "$results" | tee "$out/bench.md"
