#!/usr/bin/env python3
"""Projected real tokens a second of BERT-base, one example a row against rows of several
([train] packing = "pack"), on the GPUs of bertc's table (issue 39): `bertc estimate`'s roofline
step time of each config (the compile report's cost model, an attention over rows counted at the
tiles its measured rows leave), and the real tokens a step holds — packed, as the estimate
measures its rows; one example a row, as `bertc-bench-rows` counts the epoch's tokens. Projections
from datasheet figures, not GPU measurements. At 128 the bundled corpus; at 512 its documents
joined in runs of 1 to 40 (bench/rows_speed.py's corpus).

usage: rows_cost.py BERTC BERTC_BENCH_ROWS [--gpus p40,v100,a100,h200] [--work DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import rows_speed

SOURCE = rows_speed.SOURCE


def config(work, name, seq, data, packing, most):
    text = open(os.path.join(SOURCE, "examples", "bert-base.toml")).read()
    text = re.sub(r"^seq_len = .*$", f"seq_len = {seq}", text, flags=re.M)
    text = re.sub(r"^max_predictions_per_seq = .*$", f"max_predictions_per_seq = {20 if seq == 128 else 80}", text,
                  flags=re.M)
    text = text.replace("[train]\n", f'[train]\npacking = "{packing}"\npacking_max_examples = {most}\n'
                                     f'data = "{data}"\nvocab = "{rows_speed.VOCAB}"\n', 1)
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


def estimate(bertc, path, gpus):
    out = subprocess.run([bertc, "estimate", path, "--compression", "none", "--json"] +
                         [x for g in gpus for x in ("--gpu", g)], check=True, capture_output=True, text=True).stdout
    return {r["gpu"]: r for r in json.loads(out)}


def fill_one_a_row(bench_rows, path, seq):
    """The share of a row's positions that are tokens, one example a row (bertc-bench-rows)."""
    out = subprocess.run([bench_rows, path, "--seq-len", str(seq)], check=True, capture_output=True, text=True).stdout
    line = out.strip().splitlines()[-1].split()
    return float(line[3].rstrip("%")) / 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bertc")
    parser.add_argument("bench_rows")
    parser.add_argument("--gpus", default="p40,v100,a100,h200")
    parser.add_argument("--work", default=None)
    a = parser.parse_args()
    gpus = a.gpus.split(",")
    work = a.work or tempfile.mkdtemp(prefix="bertc-rows-cost-")
    os.makedirs(work, exist_ok=True)
    joined = os.path.join(work, "long-documents.txt")
    rows_speed.long_documents(joined)
    print("| seq_len | K | GPU | step, one a row | step, rows | real tokens/s, one a row | rows | ratio | "
          "FLOPs per real token vs the real tokens' own |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for seq, data, most in ((128, rows_speed.CORPUS, 3), (512, joined, 3), (512, joined, 8)):
        none = config(work, f"none-{seq}", seq, data, "none", most)
        pack = config(work, f"pack-{seq}-{most}", seq, data, "pack", most)
        fill = fill_one_a_row(a.bench_rows, none, seq)
        unpacked, packed = estimate(a.bertc, none, gpus), estimate(a.bertc, pack, gpus)
        for gpu in gpus:
            u, p = unpacked[gpu], packed[gpu]
            rows = tomllib.load(open(none, "rb"))["train"]["batch_size"] * u["micro_batches"]  # (a GPU's step)
            u_rate = fill * rows * seq / u["compute_seconds"]
            p_rate = p["real_tokens_per_step"] / p["compute_seconds"]
            print(f"| {seq} | {most} | {gpu} {p['precision']} | {u['compute_seconds'] * 1e3:.1f} ms | "
                  f"{p['compute_seconds'] * 1e3:.1f} ms | {u_rate:,.0f} | {p_rate:,.0f} | {p_rate / u_rate:.2f}x | "
                  f"{p['real_token_flops_ratio']:.3f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
