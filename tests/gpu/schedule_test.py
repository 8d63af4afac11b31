"""The GPU check's schedule, proven without a GPU: tests/gpu/run.sh run with its stand-in clock
(BERTC_GPU_STANDIN: no step runs, each takes its usual time from tests/gpu/steps.tsv) must start
every core step within 480 s of a 540 s run, also when any one core step hangs (it costs its share,
not the run), run the steps in the table's order, and say a step the budget cuts short "cut by
the budget", never TIMEOUT. Usage: schedule_test.py SOURCE_DIR WORK_DIR"""
import os
import re
import subprocess
import sys

SOURCE, WORK = sys.argv[1:3]
RUN = os.path.join(SOURCE, "tests", "gpu", "run.sh")
STARTS_BY = 480  # of the run's 540 s: what the GPU machine gives one call, with room to come back


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


table = [line.split("\t") for line in open(os.path.join(SOURCE, "tests", "gpu", "steps.tsv")).read().splitlines()
         if line and not line.startswith("#")]
core = [name for name, _, _, kind in table if kind == "core"]
if not core or any(kind not in ("core", "optional") for *_, kind in table):
    fail(f"steps.tsv: every step is core or optional, and some are core: {table}")
seen_optional = False
for name, _, _, kind in table:  # core steps first: what matters most never waits behind the rest
    seen_optional = seen_optional or kind == "optional"
    if kind == "core" and seen_optional:
        fail(f"core step {name} comes after an optional one in steps.tsv")


def schedule(standin, budget=None, steps=None):
    out = os.path.join(WORK, f"{standin.replace(':', '-')}-{budget}-{bool(steps)}")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, OUT=out, BERTC_GPU_STANDIN=standin)
    env.pop("BERTC_GPU_STEPS", None)
    if budget:
        env["BERTC_GPU_BUDGET"] = str(budget)
    if steps:
        env["BERTC_GPU_STEPS"] = steps
    p = subprocess.run(["bash", RUN], cwd=SOURCE, env=env, capture_output=True, text=True, timeout=120)
    if "steps.tsv" in p.stderr or p.returncode not in (0, 1):
        fail(f"run.sh ({standin}) exited {p.returncode}:\n{p.stderr[-2000:]}")
    results = open(os.path.join(out, "summary.txt")).read()
    starts = {m.group(1): int(m.group(2)) for m in
              re.finditer(r"^START (\S+) at (\d+) s", subprocess.run(
                  ["tar", "-xzOf", os.path.join(out, "logs.tar.gz"), "results.txt"], capture_output=True,
                  text=True).stdout, re.M)}
    return results, starts


# 1. Every step in its usual time: every core step starts by 480 s, in the table's order.
results, starts = schedule("usual")
for name in core:
    if name not in starts or starts[name] > STARTS_BY:
        fail(f"{name} starts at {starts.get(name)} s with every step at its usual time (must by {STARTS_BY})")
if list(starts) != [name for name, *_ in table][:len(starts)]:
    fail(f"the steps did not start in the table's order: {list(starts)}")
print(f"usual: {len(core)} core steps start by {max(starts[n] for n in core)} s; "
      f"{len(starts)} of {len(table)} steps start in 540 s")
# 2. Any one core step hanging: it is stopped at its share, and every core step still starts by 480 s.
for hung in core:
    results, starts = schedule(f"hang:{hung}")
    late = [f"{n} at {starts.get(n)} s" for n in core if n not in starts or starts[n] > STARTS_BY]
    if late:
        fail(f"with {hung} hanging, core steps start late or never: {late}")
    if not re.search(rf"^TIMEOUT after \d+ s \(its share in steps.tsv\) {hung} ", results, re.M):
        fail(f"a hang of {hung} was not stopped at its share:\n{results}")
print(f"one hang: every core step still starts by {STARTS_BY} s, whichever of the {len(core)} hangs")
# 3. A step the budget cuts short says so, and steps past the budget are skipped saying so: the
# budget ends halfway through the first step of 10 s or more.
usual_s = {name: int(usual) for name, _, usual, _ in table}
_, starts = schedule("usual")
long_one = next(name for name, *_ in table if usual_s[name] >= 10)
budget = starts[long_one] + usual_s[long_one] // 2
results, _ = schedule("usual", budget=budget)
if "TIMEOUT" in results or not re.search(rf"^CUT BY THE BUDGET after \d+ s {long_one} ", results, re.M) or \
        f"(cut by the budget: the run's {budget} s are spent)" not in results:
    fail(f"a {budget} s budget's last steps were not said to be cut by the budget:\n{results}")
print(f"a short budget ({budget} s): cut short and skipped steps say 'cut by the budget'")
# 4. BERTC_GPU_STEPS: only the steps asked run (in the table's order), the rest said not asked.
asked = [table[-1][0], core[1]]
results, starts = schedule("usual", steps="^(" + "|".join(asked) + ")$")
if list(starts) != [name for name, *_ in table if name in asked]:
    fail(f"BERTC_GPU_STEPS={asked} started {list(starts)}")
if results.count("(not asked: BERTC_GPU_STEPS=") != len(table) - len(asked):
    fail(f"the steps not asked are not each said to be skipped:\n{results}")
print(f"BERTC_GPU_STEPS: only {asked} run")
print("PASS")
