"""Prints 'step loss' for every line of a bertc metrics.jsonl, full precision (repr)."""
import json
import sys

for line in open(sys.argv[1]):
    m = json.loads(line)
    print(m["step"], repr(m["loss"]))
