#!/usr/bin/env python3
"""Data-parallel training over a rate-limited link: step times, bytes the kernel counted, and
`bertc estimate`'s prediction for the same link (issue 40).

Runs 2 ranks of `bertc train` as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1:
Gloo over TCP) inside a network namespace of their own, whose loopback the kernel's traffic
control limits: a tbf qdisc at each --rates rate, and a pfifo (no limit, but counted) for the
baseline. Per compression and rate it reports the median step after the warm-ups, the bytes a
step bertc says it all-reduced, the bytes the qdisc passed a step (the kernel's count: every
byte of both ranks, TCP/IP headers and the control messages included), and the step `bertc
estimate` predicts: the unlimited run's step plus its ring model's all-reduce at the rate
(`--between 1gbe` / `10gbe`, whose line rates the qdisc enforces), doubled: the loopback is one
device, both ranks' sends share its one qdisc (a half-duplex link; a ring's two directions
share it, where a NIC carries the rate each way). Nothing in bertc is throttled: the kernel
shapes the traffic. Figures, not a test; tests/distributed/slow_link_test.py asserts the bytes.

The "mid" model (4 layers, hidden 512: 13.3M params, 53 MB of fp32 gradients a step) makes the
link matter at 1 and 10 Gbit/s next to 2 CPU ranks' compute; "tiny" is bert-tiny (2.1 MB).

Needs: root (or user namespaces), `unshare`, `ip`, `tc` with the tbf and pfifo qdiscs. Where any
is missing it says which and exits 77 (a skip). Latency is not added: netem is not in this
machine's kernel (the loopback's own is microseconds).

usage: bench/slow_link.py BERTC SOURCE_DIR WORK_DIR [--model mid|tiny] [--rates 1gbit,10gbit] [--steps 10]
                          [--compressions none,fp16,powersgd,onebit,zero] [--json FILE]
("zero": fp32 sums with [train] zero_stage = 1, the optimizer step sharded: ZeRO-1 on against none's off)
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
WARMUP = 2  # PowerSGD's and 1-bit's fp32 steps; the steps measured come after them and one more
LINKS = {"1gbit": "1gbe", "10gbit": "10gbe"}  # bertc estimate's interconnect at the same line rate

MID_MODEL = """[model]
vocab_size = 320
hidden_size = 512
num_hidden_layers = 4
num_attention_heads = 8
intermediate_size = 2048
max_position_embeddings = 512
type_vocab_size = 2
pad_token_id = 0
hidden_dropout_prob = 0.1
attention_probs_dropout_prob = 0.1
layer_norm_eps = 1e-12
initializer_range = 0.02
"""


def capable():
    """'' where a namespace with a tbf-limited loopback can be made here, else what is missing."""
    for tool in ("unshare", "ip", "tc"):
        if not shutil.which(tool):
            return f"no {tool} on PATH (Debian: apt-get install iproute2 util-linux)"
    probe = subprocess.run(["unshare", "-n", "sh", "-c",
                            "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 256kb latency 100ms"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot shape a network namespace's loopback (root or user namespaces and tc's tbf needed): " \
               f"{probe.stderr.strip() or probe.returncode}"
    return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(source, work, name, model, steps, compression, batch_size=None):
    """bert-tiny (or the mid model) for `steps` steps, `compression` for its gradient sums."""
    text = open(os.path.join(source, "examples", "bert-tiny.toml")).read()
    batch = batch_size or (4 if model == "tiny" else 2)
    seq = 128 if model == "tiny" else 64
    for key, value in (("steps", steps), ("checkpoint_every", 0), ("log_every", 1), ("batch_size", batch),
                       ("seq_len", seq), ("max_predictions_per_seq", 10)):
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    if model == "mid":
        text = re.sub(r"\[model\]\n.*?\n\n", MID_MODEL + "\n", text, flags=re.S)
    text = re.sub(r'^(data|vocab) = "([^"]*)"', lambda m: f'{m.group(1)} = "{os.path.join(source, "examples", m.group(2))}"',
                  text, flags=re.M)
    # "zero": fp32 sums with ZeRO stage 1 (a reduce-scatter of the gradients by share, an
    # all-gather of the params each rank updated): the bytes of a ring all-reduce, in other
    # collectives.
    sums = "none" if compression == "zero" else compression
    extra = f'gradient_compression = "{sums}"\npowersgd_warmup_steps = {WARMUP}\n'
    if compression == "zero":
        extra += "zero_stage = 1\n"
    if compression == "onebit":
        extra += f"onebit_warmup_steps = {WARMUP}\n"
    text = text.replace("[train]\n", "[train]\n" + extra, 1)
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


def inner(bertc, cfg, run, rate):
    """In the namespace: a counting qdisc on the loopback (rate 'none': pfifo, else tbf), both
    ranks, then the qdisc's byte count into RUN.bytes; returns the first failing rank's code."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # (a tbf burst of at least two of the loopback's 64 KiB packets: a smaller one passes nothing)
    qdisc = ["pfifo"] if rate == "none" else ["tbf", "rate", rate, "burst", "256kb", "latency", "500ms"]
    subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", *qdisc], check=True)
    port = str(free_port())
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([bertc, "train", cfg, "--device", "cpu", "--checkpoint-dir", run], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    open(run + ".log", "w").write("\n".join(outs))
    stats = subprocess.run(["tc", "-s", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
    sent = re.search(r"Sent (\d+) bytes", stats)
    open(run + ".bytes", "w").write(sent.group(1) if sent else "-1")
    return next((p.returncode for p in procs if p.returncode), 0)


def run_ranks(bertc, cfg, run, rate):
    """2 ranks in a fresh namespace; returns the bytes its loopback passed. Exits on a failure."""
    shutil.rmtree(run, ignore_errors=True)
    code = subprocess.run(["unshare", "-n", sys.executable, os.path.abspath(__file__), "--inner", bertc, cfg, run,
                           rate]).returncode
    if code:
        sys.exit(f"{os.path.basename(run)}: a rank exited {code}; see {run}.log")
    return int(open(run + ".bytes").read())


def metrics(run):
    return [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]


def median_step(run, skip):
    steps = [m for m in metrics(run) if "step_seconds" in m][skip:]
    return statistics.median(m["step_seconds"] for m in steps), statistics.median(m["allreduce_bytes"] for m in steps)


def predicted_allreduce(bertc, cfg, compression, link):
    """bertc estimate's ring all-reduce for 2 GPUs on 2 machines joined by `link` (seconds)."""
    out = subprocess.run([bertc, "estimate", cfg, "--gpu", "p40", "--machines", "2", "--gpus-per-machine", "1",
                          "--between", link, "--compression", "none" if compression == "zero" else compression, "--json"],
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    return rows[0]["allreduce_seconds"], rows[0]["bytes_per_step"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(*sys.argv[2:6]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bertc")
    parser.add_argument("source")
    parser.add_argument("work")
    parser.add_argument("--model", choices=("mid", "tiny"), default="mid")
    parser.add_argument("--rates", default="1gbit,10gbit")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--compressions", default="none,fp16,powersgd,onebit,zero")
    parser.add_argument("--json", help="write the figures here too")
    a = parser.parse_args()
    missing = capable()
    if missing:
        print(f"SKIP: a rate-limited link cannot be made here: {missing}")
        sys.exit(SKIP)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    rates = a.rates.split(",")
    skip = WARMUP + 1
    print(f"2 ranks (Gloo over 127.0.0.1, CPU reference), {a.model} model, {a.steps} steps (median after {skip}); "
          f"the loopback of a namespace limited by tbf (half-duplex: both ranks share it)")
    print("| compression | rate | bytes a step (bertc) | on the wire, the run's / steps (kernel) | step measured | "
          "step predicted | predicted / measured |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    figures = []
    for compression in a.compressions.split(","):
        cfg = config(a.source, a.work, compression, a.model, a.steps, compression)
        base = None
        for rate in ["none", *rates]:
            run = os.path.join(a.work, f"{compression}-{rate}")
            wire = run_ranks(a.bertc, cfg, run, rate)
            seconds, sent = median_step(run, skip)
            row = {"compression": compression, "rate": rate, "bytes_per_step": sent, "step_seconds": seconds,
                   "wire_bytes_run": wire}
            if rate == "none":
                base = seconds
                predicted = None
            else:
                allreduce, _ = predicted_allreduce(a.bertc, cfg, compression, LINKS.get(rate, rate))
                predicted = base + 2 * allreduce  # (half-duplex: both directions share the loopback)
                row.update(predicted_seconds=predicted, estimate_allreduce_seconds=allreduce)
            figures.append(row)
            ratio = f"{predicted / seconds:.2f}" if predicted else "-"
            print(f"| {compression} | {rate} | {sent:,.0f} | {wire / a.steps:,.0f} | {seconds * 1e3:.0f} ms | "
                  f"{predicted * 1e3:.0f} ms | {ratio} |" if predicted else
                  f"| {compression} | unlimited | {sent:,.0f} | {wire / a.steps:,.0f} | {seconds * 1e3:.0f} ms | - | - |",
                  flush=True)
    if a.json:
        json.dump(figures, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
