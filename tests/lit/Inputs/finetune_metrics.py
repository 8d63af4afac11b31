"""Checks a bertc finetune metrics.jsonl: steps 1..STEPS in order with finite losses, EPOCHS epoch
lines with dev scores in range, and `best` on exactly the epochs whose dev accuracy beat every
earlier one (the best checkpoint's rule). Prints METRICS: ... or exits naming the problem.
Usage: finetune_metrics.py METRICS STEPS EPOCHS"""
import json
import math
import sys

path, steps, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(line) for line in open(path)]
step_lines = [m for m in lines if "loss" in m]
epoch_lines = [m for m in lines if "epoch" in m and "train_loss" in m]
if [m["step"] for m in step_lines] != list(range(1, steps + 1)):
    sys.exit(f"steps {[m['step'] for m in step_lines]}, expected 1..{steps}")
if not all(math.isfinite(m["loss"]) for m in step_lines):
    sys.exit("a loss is not finite")
if [m["epoch"] for m in epoch_lines] != list(range(1, epochs + 1)):
    sys.exit(f"epoch lines {[m['epoch'] for m in epoch_lines]}, expected 1..{epochs}")
best = -1.0
for m in epoch_lines:
    dev = m["dev"]
    if not (0 <= dev["accuracy"] <= 1 and 0 <= dev["f1"] <= 1 and -1 <= dev["mcc"] <= 1):
        sys.exit(f"epoch {m['epoch']}: scores out of range: {dev}")
    if m["best"] != (dev["accuracy"] > best):
        sys.exit(f"epoch {m['epoch']}: best is {m['best']} with accuracy {dev['accuracy']} after {best}")
    best = max(best, dev["accuracy"])
print(f"METRICS: {steps} steps, {epochs} epochs")
