#!/usr/bin/env python3
"""Real tokens a second, one example a row against rows of several ([train] packing = "pack"),
as ratios within one run (issue 39): `bertc train` of the bundled bert-tiny config for a few
steps on each device named, at seq 128 on the bundled corpus and at seq 512 on a corpus of longer
documents (each 1 to 40 of the bundled corpus's documents joined, the number drawn from a
geometric spread seeded here: a spread of document lengths, not Wikipedia's text). The trainer's
tokens a second count real tokens (the mask's ones), so the ratio is the work saved.

usage: rows_speed.py BERTC [--devices cpu,host] [--steps 12] [--work DIR]
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(SOURCE, "examples", "data", "corpus.txt")
VOCAB = os.path.join(SOURCE, "examples", "data", "vocab.txt")


def long_documents(path):
    """The bundled corpus's documents joined in runs of 1 to 40 (seed 39), one file."""
    documents = [d for d in open(CORPUS).read().split("\n\n") if d.strip()]
    rng, out, at = random.Random(39), [], 0
    while at < len(documents):
        n = min(40, 1 + int(rng.expovariate(1 / 8)))
        out.append("\n".join(d.strip() for d in documents[at:at + n]))
        at += n
    with open(path, "w") as f:
        f.write("\n\n".join(out) + "\n")
    return len(out)


def config(work, name, seq, data, packing, steps):
    text = open(os.path.join(SOURCE, "examples", "bert-tiny.toml")).read()
    for key, value in (("seq_len", seq), ("steps", steps), ("checkpoint_every", 0), ("log_every", 1),
                       ("warmup_steps", 0), ("max_predictions_per_seq", 20 if seq == 128 else 80)):
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    text = re.sub(r'^data = .*$', f'data = "{data}"', text, flags=re.M)
    text = re.sub(r'^vocab = .*$', f'vocab = "{VOCAB}"', text, flags=re.M)
    text = text.replace("[train]\n", f'[train]\npacking = "{packing}"\n', 1)
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


def real_tokens_per_second(bertc, config_path, device, run):
    subprocess.run([bertc, "train", config_path, "--device", device, "--checkpoint-dir", run], check=True,
                   capture_output=True, text=True, timeout=3600)
    rates = [json.loads(line)["tokens_per_second"] for line in open(os.path.join(run, "metrics.jsonl"))]
    return statistics.median(rates[2:])  # (the first steps compile and warm caches)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bertc")
    parser.add_argument("--devices", default="cpu,host")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--work", default=None)
    a = parser.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="bertc-rows-speed-")
    os.makedirs(work, exist_ok=True)
    joined = os.path.join(work, "long-documents.txt")
    print(f"corpus at 512: {long_documents(joined)} documents of 1 to 40 bundled ones joined ({joined})")
    print("| device | seq_len | real tokens/s, one a row | rows of up to 3 | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for device in a.devices.split(","):
        for seq, data in ((128, CORPUS), (512, joined)):
            rates = {}
            for packing in ("none", "pack"):
                name = f"{device}-{seq}-{packing}"
                rates[packing] = real_tokens_per_second(a.bertc, config(work, name, seq, data, packing, a.steps), device,
                                                        os.path.join(work, "run-" + name))
            print(f"| {device} | {seq} | {rates['none']:.0f} | {rates['pack']:.0f} | {rates['pack'] / rates['none']:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
