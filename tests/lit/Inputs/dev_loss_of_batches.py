"""Checks that batches bertc batch wrote of a dev file, evaluated one by one (bertc eval), make the
dev loss a fine-tuning run logged for it: their losses weighted by their examples (the sum of each
batch's label_weights) against the last epoch line's dev loss in METRICS, within 1e-6 of it (the
same reference executor on the same rows; float sums in another order). A batch of other examples,
labels or lengths moves the mean by far more. Prints DEV-LOSS: ... or exits naming the difference.
usage: dev_loss_of_batches.py METRICS BATCH EVAL_OUTPUT [BATCH EVAL_OUTPUT ...] (EVAL_OUTPUT: what bertc eval
printed for BATCH, its "loss X" line)"""
import json
import struct
import sys


def weight_of(path):
    data = open(path, "rb").read()
    header_len = struct.unpack("<Q", data[:8])[0]
    entry = json.loads(data[8:8 + header_len])["label_weights"]
    begin, end = entry["data_offsets"]
    raw = data[8 + header_len + begin:8 + header_len + end]
    return sum(struct.unpack(f"<{len(raw) // 4}f", raw))


metrics, pairs = sys.argv[1], sys.argv[2:]
dev = [json.loads(line) for line in open(metrics) if '"dev"' in line][-1]["dev"]
weights = [weight_of(pairs[i]) for i in range(0, len(pairs), 2)]
losses = [float(next(line.split()[1] for line in open(pairs[i + 1]) if line.startswith("loss ")))
          for i in range(0, len(pairs), 2)]
mean = sum(w * l for w, l in zip(weights, losses)) / sum(weights)
if sum(weights) != dev["count"] or abs(mean - dev["loss"]) > 1e-6 * abs(dev["loss"]):
    sys.exit(f"batches of {sum(weights)} examples, mean loss {mean}; the run's dev: {dev['count']}, {dev['loss']}")
print(f"DEV-LOSS: {len(weights)} batches of {int(sum(weights))} examples make the run's dev loss")
