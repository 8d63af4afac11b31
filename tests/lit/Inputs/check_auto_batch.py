"""Checks a --batch-size auto log: every size tried keeps the global batch, the chosen one is the
first (largest) whose planned bytes fit, every larger one does not, and training used it."""
import re
import sys

tried = []
used = None
for line in open(sys.argv[1]):
    m = re.match(r"batch-size auto: micro-batch (\d+) x (\d+) needs ([\d.]+) MiB of ([\d.]+) MiB usable(: chosen)?", line)
    if m:
        tried.append((int(m[1]), int(m[2]), float(m[3]), float(m[4]), bool(m[5])))
    m = re.match(r"train: micro-batch (\d+) x (\d+) accumulation steps \(global batch (\d+)\)", line)
    if m:
        used = (int(m[1]), int(m[2]))
global_batch = int(sys.argv[2])
assert tried, "no sizes tried"
assert all(b * k == global_batch for b, k, *_ in tried), tried
assert [b for b, *_ in tried] == sorted((b for b, *_ in tried), reverse=True), "not largest first"
chosen = [t for t in tried if t[4]]
assert len(chosen) == 1 and chosen[0] is tried[-1], tried
assert chosen[0][2] <= chosen[0][3], "the chosen size does not fit"
assert all(need > usable for _, _, need, usable, _ in tried[:-1]), "a larger size fitted"
assert used == chosen[0][:2], (used, chosen)
print(f"AUTO: micro-batch {used[0]} x {used[1]}")
