#!/usr/bin/env python3
"""Data-parallel training over a rate-limited link: figures, not a test (issue 40, a first slice; not in CI).

Runs 2 ranks of `bertc train` as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR: Gloo over
TCP to 127.0.0.1) inside a network namespace of their own, whose loopback the kernel's traffic
control (a tbf qdisc) limits to --rate; once unlimited in a namespace too, for the baseline. For
each gradient compression asked it reports the median step time after the warm-up steps and the
bytes a rank's step all-reduces, the step time against the unlimited run's, and what
`bertc estimate`'s ring model says the all-reduce takes at that rate (2 (N-1)/N x bytes / rate).
Nothing in bertc is throttled: the kernel shapes the traffic.

The loopback is one device: both ranks' sends queue in its one limited qdisc, so the link is
half-duplex at --rate (a ring all-reduce's two directions share it), where a real NIC carries
--rate each way. Full duplex needs each rank in a namespace of its own joined by a veth pair, each
end limited (veth and `ip netns` work on this machine), which sends to an address other than
127.0.0.1.

Needs: root (or user namespaces), `unshare`, `ip`, `tc` with the tbf qdisc. Where any is missing
it says which and exits 77 (a skip). netem (added latency) is not needed; where the kernel lacks
it (this machine's does), latency would need a preloaded send shim.

usage: bench/slow_link.py BERTC SOURCE_DIR WORK_DIR [--rate 100mbit] [--steps 16] [--compressions none,fp16,powersgd]
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys

SKIP = 77


def capable():
    """'' where a namespace with a tbf-limited loopback can be made here, else what is missing."""
    for tool in ("unshare", "ip", "tc"):
        if not shutil.which(tool):
            return f"no {tool} on PATH"
    probe = subprocess.run(["unshare", "-n", "sh", "-c",
                            "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 256kb latency 100ms"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot shape a namespace's loopback: {probe.stderr.strip() or probe.returncode}"
    return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(source, work, name, steps, compression):
    """bert-tiny for `steps` steps, micro-batch 4 a rank, `compression` for its gradient sums."""
    text = open(os.path.join(source, "examples", "bert-tiny.toml")).read()
    for key, value in (("steps", steps), ("checkpoint_every", 0), ("log_every", 1), ("batch_size", 4)):
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    text = re.sub(r'^(data|vocab) = "([^"]*)"', lambda m: f'{m.group(1)} = "{os.path.join(source, "examples", m.group(2))}"',
                  text, flags=re.M)
    # (PowerSGD's fp32 warm-up cut to 2 steps, so that the steps measured are compressed ones)
    text = text.replace("[train]\n", f'[train]\ngradient_compression = "{compression}"\npowersgd_warmup_steps = 2\n', 1)
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


def inner(bertc, cfg, run, rate):
    """In the namespace: shape the loopback (rate 'none': up only), run both ranks, return rank 0's code."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if rate != "none":
        # (a burst of at least two of the loopback's 64 KiB packets: a smaller one passes nothing)
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", rate, "burst", "256kb", "latency",
                        "500ms"], check=True)
    port = str(free_port())
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([bertc, "train", cfg, "--device", "cpu", "--checkpoint-dir", run], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    open(run + ".log", "w").write("\n".join(outs))
    return next((p.returncode for p in procs if p.returncode), 0)


def measured(run, warmup):
    lines = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    steps = [m for m in lines if "step_seconds" in m][warmup:]
    return statistics.median(m["step_seconds"] for m in steps), statistics.median(m["allreduce_bytes"] for m in steps)


def bits_per_second(rate):
    m = re.fullmatch(r"([0-9.]+)(k|m|g)bit", rate)
    return float(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(*sys.argv[2:6]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bertc")
    parser.add_argument("source")
    parser.add_argument("work")
    parser.add_argument("--rate", default="100mbit")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--compressions", default="none,fp16,powersgd")
    a = parser.parse_args()
    missing = capable()
    if missing:
        print(f"SKIP: a rate-limited link cannot be made here: {missing}")
        sys.exit(SKIP)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    warmup = 4
    rate = bits_per_second(a.rate)
    print(f"2 ranks (Gloo, CPU reference), bert-tiny, micro-batch 4 a rank, {a.steps} steps (median after {warmup}); "
          f"loopback limited to {a.rate} by tbf in a namespace")
    print("| compression | bytes a step | step, unlimited | step, limited | difference | ring model at the rate |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for compression in a.compressions.split(","):
        cfg = config(a.source, a.work, compression, a.steps, compression)
        seconds = {}
        for limit in ("none", a.rate):
            run = os.path.join(a.work, f"{compression}-{limit}")
            code = subprocess.run(["unshare", "-n", sys.executable, os.path.abspath(__file__), "--inner", a.bertc, cfg, run,
                                   limit]).returncode
            if code:
                sys.exit(f"{compression} at {limit}: exited {code}; see {run}.log")
            seconds[limit], sent = measured(run, warmup)
        model = 2 * (2 - 1) / 2 * sent * 8 / rate
        print(f"| {compression} | {sent:,.0f} | {seconds['none'] * 1e3:.0f} ms | {seconds[a.rate] * 1e3:.0f} ms | "
              f"{(seconds[a.rate] - seconds['none']) * 1e3:+.0f} ms | {model * 1e3:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
