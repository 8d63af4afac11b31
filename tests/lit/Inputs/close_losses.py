"""Compares the losses of two bertc metrics.jsonl files step by step: prints CLOSE when every
step's losses agree within the relative tolerance argv[3] but are not all identical (so a
reduced-precision run really rounded), else the first offending step."""
import json
import sys


def losses(path):
    return {m["step"]: m["loss"] for m in map(json.loads, open(path)) if "loss" in m}  # (not epoch lines)


a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if a.keys() != b.keys():
    sys.exit(f"different steps: {sorted(a)} vs {sorted(b)}")
worst = max(abs(a[s] - b[s]) / abs(b[s]) for s in a)
for s in sorted(a):
    if abs(a[s] - b[s]) > tol * abs(b[s]):
        sys.exit(f"step {s}: loss {a[s]!r} vs {b[s]!r}, beyond {tol} relative")
print("IDENTICAL" if worst == 0 else f"CLOSE: {len(a)} steps, largest relative difference {worst:.1e}")
