"""Checks that `bertc eval`'s loss (EVAL_OUTPUT) equals the loss metrics.jsonl logged for STEP.
Both come from the same fp32 graph ops on the same batch and weights; the 1e-7 relative bound
only allows for the 9 significant digits eval prints."""
import json
import sys

metrics, step, eval_output = sys.argv[1], int(sys.argv[2]), sys.argv[3]
logged = [json.loads(l)["loss"] for l in open(metrics) if json.loads(l)["step"] == step][-1]
evaluated = float(dict(l.split() for l in open(eval_output))["loss"])
ok = abs(logged - evaluated) <= 1e-7 * abs(logged)
print(f"{'SAME' if ok else 'DIFFERENT'}: training logged {logged!r} at step {step}, eval gives {evaluated!r}")
sys.exit(0 if ok else 1)
