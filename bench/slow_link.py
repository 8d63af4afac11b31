#!/usr/bin/env python3
"""Data-parallel training over a rate-limited link: step times, bytes the kernel counted, and
`bertc estimate`'s prediction for the same link (issue 40).

Runs --ranks (2 to 4) ranks of `bertc train` as torchrun starts them (RANK, WORLD_SIZE,
MASTER_ADDR=127.0.0.1: Gloo over TCP) inside a network namespace of their own, whose loopback the
kernel's traffic control limits: a tbf qdisc at each --rates rate, and a pfifo (no limit, but
counted) for the baseline. --latency-us adds a hop's latency to the limited runs, by a preloaded
shim (bench/send_shim.c, built here with cc): this kernel has no netem qdisc. Where the kernel's
traffic control cannot be had at all (no tc, no namespaces; or --shaper shim), the shim limits
the rate too, each rank's sends at the rate (a NIC each, full duplex), on the machine's own
loopback; the bytes on the wire are then not counted.

Per compression and rate it reports the median step after the warm-ups, the bytes a step bertc
says it all-reduced, the bytes the qdisc passed a step (the kernel's count: every byte of every
rank, TCP/IP headers and the control messages included), and the step `bertc estimate`
predicts: the unlimited run's step plus its ring model's all-reduce at the rate
(`--between 1gbe` / `10gbe`, whose line rates the qdisc enforces; `--latency-us` as added), its
transfer times the ranks under tc: the loopback is one device, every rank's sends share its one
qdisc (a half-duplex link, where a NIC carries the rate each way). Nothing in bertc is
throttled: the kernel, or the shim in the harness, shapes the traffic. Figures, not a test;
tests/distributed/slow_link_test.py asserts the bytes and the shim's shaping.

The "mid" model (4 layers, hidden 512: 13.3M params, 53 MB of fp32 gradients a step) makes the
link matter at 1 and 10 Gbit/s next to 2 CPU ranks' compute; "tiny" is bert-tiny (2.1 MB).

Needs: root (or user namespaces), `unshare`, `ip`, `tc` with the tbf and pfifo qdiscs; else (or
for --latency-us) a C compiler for the shim. Where neither can shape it says what is missing and
exits 77 (a skip).

usage: bench/slow_link.py BERTC SOURCE_DIR WORK_DIR [--model mid|tiny] [--rates 1gbit,10gbit] [--steps 10]
                          [--compressions none,fp16,powersgd,onebit,zero] [--ranks 2] [--latency-us 0]
                          [--shaper tc|shim] [--json FILE]
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


def bytes_a_second(rate):
    """'1gbit' -> 125e6: tc's rate units (bits), as bytes a second."""
    m = re.fullmatch(r"([\d.]+)([kmg]?)bit", rate)
    if not m:
        sys.exit(f"--rates {rate}: give rates as tc writes them (1gbit, 100mbit)")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def build_shim(source, work):
    """The send shim built into WORK, or None (and why) without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc) to build bench/send_shim.c"
    shim = os.path.join(work, "send_shim.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", shim, os.path.join(source, "bench", "send_shim.c"), "-ldl",
                    "-lpthread"], check=True)
    return shim, ""


def inner(bertc, cfg, run, rate, ranks, shaper, latency_us, shim):
    """Starts the ranks (under tc, in their namespace: a counting qdisc on the loopback first;
    rate 'none': pfifo, else tbf), then writes the qdisc's byte count into RUN.bytes (-1 without
    tc); returns the first failing rank's code."""
    ranks, latency_us = int(ranks), float(latency_us)
    if shaper == "tc":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        # (a tbf burst of at least two of the loopback's 64 KiB packets: a smaller one passes nothing)
        qdisc = ["pfifo"] if rate == "none" else ["tbf", "rate", rate, "burst", "256kb", "latency", "500ms"]
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", *qdisc], check=True)
    shaping = {}
    if rate != "none" and latency_us > 0:
        shaping["BERTC_SHIM_DELAY_US"] = str(latency_us)
    if rate != "none" and shaper == "shim":
        shaping["BERTC_SHIM_RATE_BPS"] = str(bytes_a_second(rate))
    if shaping:
        shaping["LD_PRELOAD"] = shim
    port = str(free_port())
    procs = []
    for r in range(ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, **shaping)
        procs.append(subprocess.Popen([bertc, "train", cfg, "--device", "cpu", "--checkpoint-dir", run], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    open(run + ".log", "w").write("\n".join(outs))
    sent = None
    if shaper == "tc":
        stats = subprocess.run(["tc", "-s", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
        sent = re.search(r"Sent (\d+) bytes", stats)
    open(run + ".bytes", "w").write(sent.group(1) if sent else "-1")
    return next((p.returncode for p in procs if p.returncode), 0)


def run_ranks(bertc, cfg, run, rate, ranks, shaper, latency_us, shim):
    """The ranks (in a fresh namespace under tc); returns the bytes its loopback passed (-1: not
    counted). Exits on a failure."""
    shutil.rmtree(run, ignore_errors=True)
    args = ["--inner", bertc, cfg, run, rate, str(ranks), shaper, str(latency_us), shim or ""]
    here = [sys.executable, os.path.abspath(__file__), *args]
    code = subprocess.run(["unshare", "-n", *here] if shaper == "tc" else here).returncode
    if code:
        sys.exit(f"{os.path.basename(run)}: a rank exited {code}; see {run}.log")
    return int(open(run + ".bytes").read())


def metrics(run):
    return [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]


def median_step(run, skip):
    steps = [m for m in metrics(run) if "step_seconds" in m][skip:]
    return statistics.median(m["step_seconds"] for m in steps), statistics.median(m["allreduce_bytes"] for m in steps)


def predicted_allreduce(bertc, cfg, compression, link, ranks, latency_us):
    """bertc estimate's ring all-reduce for `ranks` GPUs on as many machines joined by `link`, a
    hop's latency `latency_us` (0: none added): its transfer and its latencies (seconds)."""
    out = subprocess.run([bertc, "estimate", cfg, "--gpu", "p40", "--machines", str(ranks), "--gpus-per-machine", "1",
                          "--between", link, "--latency-us", str(latency_us),
                          "--compression", "none" if compression == "zero" else compression, "--json"],
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    return rows[0]["allreduce_seconds"] - rows[0]["latency_seconds"], rows[0]["latency_seconds"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(*sys.argv[2:10]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bertc")
    parser.add_argument("source")
    parser.add_argument("work")
    parser.add_argument("--model", choices=("mid", "tiny"), default="mid")
    parser.add_argument("--rates", default="1gbit,10gbit")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--compressions", default="none,fp16,powersgd,onebit,zero")
    parser.add_argument("--ranks", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--latency-us", type=float, default=0, help="a hop's latency added to the limited runs (the shim)")
    parser.add_argument("--shaper", choices=("tc", "shim"), help="what limits the rate (default: tc where it can)")
    parser.add_argument("--json", help="write the figures here too")
    a = parser.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    missing = capable() if a.shaper != "shim" else "--shaper shim"
    if a.shaper == "tc" and missing:
        print(f"SKIP: a rate-limited link cannot be made here: {missing}")
        sys.exit(SKIP)
    shaper = "shim" if missing else "tc"
    shim, no_shim = build_shim(a.source, a.work) if shaper == "shim" or a.latency_us > 0 else (None, "")
    if no_shim:
        print(f"SKIP: {'the kernel cannot shape a link here (' + missing + '), and ' if missing else ''}{no_shim}")
        sys.exit(SKIP)
    rates = a.rates.split(",")
    for rate in rates:  # (the prediction is bertc estimate's for a link of the same line rate)
        if rate not in LINKS:
            sys.exit(f"--rates {rate}: bertc estimate has no link of that rate to predict it; give "
                     f"{' or '.join(LINKS)}")
    skip = WARMUP + 1
    shaped_by = ("the loopback of a namespace limited by tbf (half-duplex: every rank's sends share it)" if shaper == "tc"
                 else f"each rank's sends limited by the preloaded shim (a NIC each; no tc here: {missing})")
    latency = f", {a.latency_us:g} us a hop added by the shim to the limited runs" if a.latency_us > 0 else ""
    print(f"{a.ranks} ranks (Gloo over 127.0.0.1, CPU reference), {a.model} model, {a.steps} steps (median after "
          f"{skip}); {shaped_by}{latency}")
    print("| compression | rate | bytes a step (bertc) | on the wire, the run's / steps (kernel) | step measured | "
          "step predicted | predicted / measured |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    figures = []
    for compression in a.compressions.split(","):
        cfg = config(a.source, a.work, compression, a.model, a.steps, compression)
        base = None
        for rate in ["none", *rates]:
            run = os.path.join(a.work, f"{compression}-{rate}")
            wire = run_ranks(a.bertc, cfg, run, rate, a.ranks, shaper, a.latency_us, shim)
            seconds, sent = median_step(run, skip)
            row = {"compression": compression, "rate": rate, "bytes_per_step": sent, "step_seconds": seconds,
                   "wire_bytes_run": wire if wire >= 0 else None, "ranks": a.ranks, "latency_us": a.latency_us,
                   "shaper": shaper}
            if rate == "none":
                base = seconds
                predicted = None
            else:
                transfer, latencies = predicted_allreduce(a.bertc, cfg, compression, LINKS[rate], a.ranks,
                                                          a.latency_us)
                # (under tc every rank's sends queue on the one loopback: N times a rank's transfer)
                predicted = base + (a.ranks if shaper == "tc" else 1) * transfer + latencies
                row.update(predicted_seconds=predicted, estimate_transfer_seconds=transfer,
                           estimate_latency_seconds=latencies)
            figures.append(row)
            ratio = f"{predicted / seconds:.2f}" if predicted else "-"
            on_wire = f"{wire / a.steps:,.0f}" if wire >= 0 else "-"
            print(f"| {compression} | {rate} | {sent:,.0f} | {on_wire} | {seconds * 1e3:.0f} ms | "
                  f"{predicted * 1e3:.0f} ms | {ratio} |" if predicted else
                  f"| {compression} | unlimited | {sent:,.0f} | {on_wire} | {seconds * 1e3:.0f} ms | - | - |",
                  flush=True)
    if a.json:
        json.dump(figures, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
