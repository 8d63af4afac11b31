"""Checks a `bertc train --profile` JSON against the program's compile report (argv: profile.json
report.json [--estimates]): one row per launch of the step and of the optimizer step, each graph's
launches numbered 0..n-1 once, every time positive, rows slowest first, the total their sum; with
--estimates every row has a positive roofline estimate and a ratio that is time / estimate.
Prints 'profile ok: N launches'."""
import json
import sys

profile = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
estimates = "--estimates" in sys.argv[3:]
rows = profile["launches"]
assert profile["format"] == "bertc-profile-1", profile["format"]
step_launches = report["step_graph"]["launches"]
optimizer_launches = report["optimizer_graph"]["launches"]
for graph, count in (("step", step_launches), ("optimizer", optimizer_launches)):
    got = sorted(r["launch"] for r in rows if r["graph"] == graph)
    assert got == list(range(count)), f"{graph}: launches {got[:5]}... of {count}"
assert len(rows) == step_launches + optimizer_launches
times = [r["seconds"] for r in rows]
assert all(t > 0 for t in times), "a launch without a time"
assert times == sorted(times, reverse=True), "rows not slowest first"
assert abs(sum(times) - profile["seconds"]) <= 1e-9 * len(times) + 1e-6 * profile["seconds"], "total is not the sum"
for r in rows:
    assert r["kernel"].startswith(("k_", "cublas_")), r["kernel"]
    assert r["family"] and r["scope"] is not None
    if estimates:
        assert r["estimate_seconds"] > 0, r
        assert abs(r["ratio_to_estimate"] - r["seconds"] / r["estimate_seconds"]) <= 1e-9 * r["ratio_to_estimate"], r
print(f"profile ok: {len(rows)} launches")
