#!/usr/bin/env python3
"""The bytes each compression puts on the wire, counted by the kernel (issue 40).

2 ranks of bert-tiny over Gloo (torchrun's variables, MASTER_ADDR=127.0.0.1) in a network
namespace of their own (bench/slow_link.py makes it), whose loopback's qdisc counts every byte
both ranks send. A run of 12 steps less one of 4 is 8 steps' traffic (the start's broadcast of the
state and the last checkpoint's exchanges cancel): per step it must be what bertc reports, twice
(each rank sends 2 (N-1)/N x its all-reduce bytes, N = 2, for a ring sum as for 1-bit's
all-to-all and all-gather), for fp32, fp16, PowerSGD and 1-bit after their warm-ups. Then the
same 12 steps of fp32 sums through a tbf limited to 1 Gbit/s: the kernel shaped and counted the
same traffic. Step times are printed, not judged (bench/slow_link.py is where they are figures).

Then the harness's preloaded shim (bench/send_shim.c), which adds latency (this kernel has no
netem) and limits the rate where tc cannot: 2 ranks whose sends it limits to 5 MB/s each must
take a step longer by at least the time their bytes need at that rate, and with 50 ms a hop
added, longer by at least the gradient sum's 2 ring steps' latency. (Without the shim both
fail: it is what slows them.)

The kernel's counts need root (or user namespaces), unshare, ip and tc with pfifo and tbf; the
shim a C compiler. Each part says why it did not run; with neither it exits 77 (ctest's skip).

usage: slow_link_test.py BERTC SOURCE_DIR WORK_DIR
"""
import os
import shutil
import sys

BERTC, SOURCE, WORK = sys.argv[1:4]
sys.path.insert(0, os.path.join(SOURCE, "bench"))
import slow_link  # noqa: E402

# Per step beyond the all-reduce: TCP/IP headers (52 bytes a segment of up to 64 KiB on the
# loopback, and the ACKs), Gloo's framing of each sum, the ranks' meeting tokens and the
# statistics' sum. Seen (2026-12-07, 16 steps; 8 since): fp32 +0.24%, fp16 +0.6% (up to +1.6%), PowerSGD
# +6.4% (15 KiB a step: its ~26 small sums' framing), 1-bit +5.0% (7 KiB). Beside a full ctest -j2
# the steps are slower and more bytes beside the sums come a step (2026-12-07: PowerSGD 26 KiB a
# step over its count; not pinned down: the ranks' waiting is the likeliest source). 3% and
# 48 KiB a step allow for that; a
# compression that sent twice what it reports fails (PowerSGD's 119 KiB a step the least), and
# fp32 or fp16 off by 5%.
RELATIVE, FIXED = 0.03, 49152
# Runs of 4 and LONG steps: the difference's steps share out what varies with a run's length
# alone (rendezvous pings while a rank waits: tens of KiB a run).
LONG = 12


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def kernel_counts():
    """The bytes on the wire, by tc's counts in a namespace; returns why not, or ''."""
    missing = slow_link.capable()
    if missing:
        return missing
    per_step = {}
    for compression in os.environ.get("KINDS", "none fp16 powersgd onebit zero").split():
        wire = {}
        for steps in (4, LONG):
            cfg = slow_link.config(SOURCE, WORK, f"{compression}-{steps}", "tiny", steps, compression)
            wire[steps] = slow_link.run_ranks(BERTC, cfg, os.path.join(WORK, f"{compression}-{steps}"), "none", 2, "tc", 0,
                                                None)
        run = os.path.join(WORK, f"{compression}-{LONG}")
        reported = [m["allreduce_bytes"] for m in slow_link.metrics(run)][4:]
        if len(set(reported)) != 1:
            fail(f"{compression}: steps 5-{LONG} report different all-reduce bytes {reported}")
        counted = (wire[LONG] - wire[4]) / (LONG - 4)
        expected = 2 * reported[0]
        seconds, _ = slow_link.median_step(run, 4)
        print(f"{compression}: bertc reports {reported[0]:,} bytes a rank's step; the kernel counted {counted:,.0f} a "
              f"step for both ranks (expected {expected:,}: {100 * (counted / expected - 1):+.2f}%); step "
              f"{seconds * 1e3:.0f} ms unlimited")
        if abs(counted - expected) > RELATIVE * expected + FIXED:
            fail(f"{compression}: the wire carried {counted:,.0f} bytes a step where bertc reports {expected:,}")
        per_step[compression] = counted
    # ZeRO-1's reduce-scatter of the gradients by share and all-gather of the params each rank
    # updated carry what the ring all-reduce's two halves do (bertc reports the same bytes for
    # both: checked above).
    if abs(per_step["zero"] - per_step["none"]) > RELATIVE * per_step["none"] + FIXED:
        fail(f"ZeRO-1 put {per_step['zero']:,.0f} bytes a step on the wire, fp32 sums {per_step['none']:,.0f}")
    if not per_step["onebit"] * 25 < per_step["none"]:
        fail(f"1-bit put {per_step['onebit']:,.0f} bytes a step on the wire, not 25x fewer than fp32's "
             f"{per_step['none']:,.0f}")
    cfg = slow_link.config(SOURCE, WORK, "none-limited", "tiny", LONG, "none")
    limited = slow_link.run_ranks(BERTC, cfg, os.path.join(WORK, "none-limited"), "1gbit", 2, "tc", 0, None)
    unlimited = os.path.join(WORK, f"none-{LONG}")
    base = open(unlimited + ".bytes").read()
    if abs(limited - int(base)) > RELATIVE * int(base) + FIXED:
        fail(f"through the 1 Gbit/s tbf the run sent {limited:,} bytes, unlimited {int(base):,}: the shaped link missed "
             f"traffic")
    seconds, _ = slow_link.median_step(os.path.join(WORK, "none-limited"), 4)
    print(f"fp32 sums through tbf at 1 Gbit/s: {limited:,} bytes in the run (unlimited {int(base):,}); step "
          f"{seconds * 1e3:.0f} ms")
    return ""


def shim_shapes():
    """The shim's rate and latency slow the ranks as much as they must; returns why not run, or ''."""
    shim, missing = slow_link.build_shim(SOURCE, WORK)
    if not shim:
        return missing
    cfg = slow_link.config(SOURCE, WORK, "shim", "tiny", 8, "none")
    steps = {}
    # (rate 'none': no shaping; 40mbit: 5 MB/s a rank; 10gbit with 50 ms: the latency alone)
    for name, rate, latency_us in (("free", "none", 0), ("rate", "40mbit", 0), ("latency", "10gbit", 50000)):
        run = os.path.join(WORK, f"shim-{name}")
        slow_link.run_ranks(BERTC, cfg, run, rate, 2, "shim", latency_us, shim)
        steps[name] = [m["step_seconds"] for m in slow_link.metrics(run)][3:]
    sent = slow_link.median_step(os.path.join(WORK, "shim-free"), 3)[1]
    # The unlimited run's fastest step (beside other tests a step only ever takes longer: its
    # fastest is the least disturbed), the shaped runs' medians.
    free = min(steps["free"])
    rate, latency = (sorted(steps[k])[len(steps[k]) // 2] for k in ("rate", "latency"))
    # Each of 2 ranks sends 2 (N-1)/N = 1 times its all-reduce bytes a step; at 5 MB/s that takes
    # sent / 5e6 s (0.43 s for bert-tiny), which nothing overlaps on the CPU reference (one bucket,
    # summed after the whole backward). 0.7 of it leaves room for the unlimited step's noise.
    need = sent / 5e6
    print(f"shim: step {free * 1e3:.0f} ms unlimited (fastest), {rate * 1e3:.0f} ms at 5 MB/s a rank (its {sent:,} "
          f"bytes need {need * 1e3:.0f} ms), {latency * 1e3:.0f} ms with 50 ms a hop; steps "
          + "; ".join(f"{k} {[round(x, 3) for x in v]}" for k, v in steps.items()))
    if rate - free < 0.7 * need:
        fail(f"the shim's 5 MB/s made a step {(rate - free) * 1e3:.0f} ms longer, and its bytes need {need * 1e3:.0f}")
    # The gradient sum's 2 ring steps at least pay the latency (the step's other messages more).
    if latency - free < 0.7 * 2 * 0.05:
        fail(f"the shim's 50 ms a hop made a step {(latency - free) * 1e3:.0f} ms longer, less than 2 hops")
    return ""


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    skipped = {part: why for part, why in (("the kernel's byte counts", kernel_counts()),
                                           ("the shim's shaping", shim_shapes())) if why}
    for part, why in skipped.items():
        print(f"SKIP: {part}: {why}")
    if len(skipped) == 2:
        sys.exit(slow_link.SKIP)


if __name__ == "__main__":
    main()
