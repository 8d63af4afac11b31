#!/usr/bin/env bash
# Fingerprints of what a structural change must leave exactly as it was: the generated kernel
# sources of bert-base (every arch x precision), the compile report's numbers, the compiled IR of
# bert-tiny, and the losses of the README's training run. Written before a refactoring and
# compared after it:
#   scripts/structure_invariants.sh BIN_DIR > before.txt     (on the old build)
#   scripts/structure_invariants.sh BIN_DIR | diff before.txt -   (on the new one)
# Each line is "what: sha256 of its text (16 digits)"; kernels are also listed by name (k_<hash of source>),
# so a diff names the kernel whose source changed. Takes a few minutes (the training run 1.5 of
# them; BERTC_INVARIANTS_QUICK=1 leaves it out). Kernel images compile into $XDG_CACHE_HOME.
set -euo pipefail
bin=${1:?usage: structure_invariants.sh BIN_DIR (the build folder)}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bertc=$bin/tools/bertc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fingerprint() { printf '%s: %s\n' "$1" "$(sha256sum < "$2" | cut -c1-16)"; }

# The report without what differs between runs of the same program: timings and cache hits.
report_numbers() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
# Before issue 12 an arch given by GPU name (p40) compiled no kernels (a bug): not compared.
if len(sys.argv) > 1 and sys.argv[1] == "without-kernels":
    r.pop("kernels", None)
r.pop("compile_seconds", None)
# Issue 12 writes the options from their declarations (dropout too) and the recompute policy
# applied under its own key: compared in the form the baseline recorded.
if "recompute_applied" in r:
    r["options"].pop("dropout", None)
    r["options"]["recompute"] = r.pop("recompute_applied")
for k in ("compile_seconds", "cache_hits"):
    r.get("kernels", {}).pop(k, None)
# Issue 39 adds each graph'"'"'s FLOPs of attentions over rows (0 here): compared without them.
for g in [r.get("step_graph"), r.get("optimizer_graph")] + [s.get("figures") for s in r.get("stages", [])]:
    if g:
        g.get("flops", {}).pop("attention_over_rows", None)
print(json.dumps(r, sort_keys=True, indent=1))' "$@"
}

base=$root/examples/bert-base.toml
tiny=$root/examples/bert-tiny.toml
for arch in sm_61 sm_70 sm_80 sm_90; do
  for precision in fp32 fp16 bf16; do
    "$bertc" compile "$base" --arch $arch --precision $precision --emit cuda > "$work/cuda"
    fingerprint "bert-base $arch $precision kernel sources" "$work/cuda"
    grep -o 'BX_KERNEL void k_[0-9a-f]*\|cuBLAS first: .*' "$work/cuda" | sed 's/^/  /'
    "$bertc" compile "$base" --arch $arch --precision $precision --report --json 2>/dev/null | report_numbers > "$work/report"
    fingerprint "bert-base $arch $precision report" "$work/report"
  done
done
for args in "--arch p40 --recompute selective" "--precision bf16 --recompute full" \
            "--recompute auto --memory-budget 1415630028" "--precision fp32-fp16storage --arch sm_61"; do
  # shellcheck disable=SC2086
  "$bertc" compile "$base" $args --report --json 2>/dev/null |
    report_numbers $([[ $args == *p40* ]] && echo without-kernels) > "$work/report"
  fingerprint "bert-base report $args" "$work/report"
done
for precision in fp32 fp16 bf16 fp32-fp16storage; do
  for recompute in none selective full; do
    for emit in step-ir optimizer-ir; do
      # Issue 12 renamed one kernel family (matmul_epilogue is now matmul, as codegen always
      # called it): compared under the old name, so that the baseline recorded before still holds.
      "$bertc" compile "$tiny" --precision $precision --recompute $recompute --emit $emit |
        sed 's/{kernel = "matmul"/{kernel = "matmul_epilogue"/' > "$work/ir"
      fingerprint "bert-tiny $precision $recompute $emit" "$work/ir"
    done
  done
done
if [ -z "${BERTC_INVARIANTS_QUICK:-}" ]; then
  "$bertc" train "$tiny" --device cpu --checkpoint-dir "$work/run" 2>/dev/null
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["step"], repr(r["loss"]), repr(r["mlm_loss"]), repr(r["nsp_loss"]), repr(r["grad_norm"]))' \
    "$work/run/metrics.jsonl" > "$work/losses"
  fingerprint "bert-tiny scripts/run.sh losses (600 steps)" "$work/losses"
  tail -1 "$work/losses" | sed 's/^/  last step: /'
fi
