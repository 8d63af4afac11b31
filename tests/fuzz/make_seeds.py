"""Writes the seed files of the reader fuzz tests, made by bertc itself so that they follow the
current formats: a checkpoint, a batch and a metrics file of a short run of fuzz-tiny.toml
(safetensors/, metrics/), its program compiled for sm_80 (bertx/) with the NVRTC cache entries
that compiling wrote (cache/), the program of fuzz-dense.toml (the smallest model, built as
fuzz-dense-model) for sm_80 too (bertx/), an HDF5 shard of a few documents (hdf5/) and the
description of one for fuzz_hdf5_layout (hdf5_layout/). Configs need no seeds: the fuzz test
reads the repository's own.

usage: make_seeds.py BERTC SOURCE_DIR OUT_DIR DENSE_MODEL [--no-hdf5]
"""
import os
import shutil
import subprocess
import sys

BERTC, SOURCE, OUT, DENSE_MODEL = sys.argv[1:5]
CONFIG = os.path.join(SOURCE, "tests", "fuzz", "fuzz-tiny.toml")
shutil.rmtree(OUT, ignore_errors=True)
for d in ("safetensors", "metrics", "bertx", "cache", "hdf5", "hdf5_layout", "scratch"):
    os.makedirs(os.path.join(OUT, d))
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(OUT, "scratch", "xdg"))


def bertc(*args, program=BERTC):
    r = subprocess.run([program, *args], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        sys.exit(f"FAIL: {os.path.basename(program)} {' '.join(args)} exited {r.returncode}:\n{r.stderr[-2000:]}")


run = os.path.join(OUT, "scratch", "run")
bertc("train", CONFIG, "--device", "cpu", "--checkpoint-dir", run)
shutil.copy(os.path.join(run, "metrics.jsonl"), os.path.join(OUT, "metrics"))
for f in os.listdir(run):
    if f.endswith(".safetensors"):
        shutil.copy(os.path.join(run, f), os.path.join(OUT, "safetensors"))
bertc("batch", CONFIG, "--index", "0", "-o", os.path.join(OUT, "safetensors", "batch.safetensors"))

bertc("compile", CONFIG, "--arch", "sm_80", "-o", os.path.join(OUT, "bertx", "fuzz-tiny.bertx"))
bertc("compile", os.path.join(SOURCE, "tests", "fuzz", "fuzz-dense.toml"), "--arch", "sm_80", "-o",
      os.path.join(OUT, "bertx", "fuzz-dense.bertx"), program=DENSE_MODEL)
entries = [os.path.join(d, f) for d, _, files in os.walk(env["XDG_CACHE_HOME"]) for f in files]
for i, e in enumerate(sorted(p for p in entries if open(p, "rb").read(8).startswith(b"BX"))[:8]):
    shutil.copy(e, os.path.join(OUT, "cache", f"entry{i}"))

text = open(os.path.join(SOURCE, "examples", "data", "corpus.txt")).read().split("\n\n")[:6]
open(os.path.join(OUT, "scratch", "docs.txt"), "w").write("\n\n".join(text) + "\n")
if "--no-hdf5" not in sys.argv:
    bertc("prepare-data", CONFIG, "-o", os.path.join(OUT, "scratch", "shards"), "--input",
          os.path.join(OUT, "scratch", "docs.txt"), "--shards", "1")
    for d, _, files in os.walk(os.path.join(OUT, "scratch", "shards")):
        for f in files:
            if f.endswith((".hdf5", ".h5")):
                shutil.copy(os.path.join(d, f), os.path.join(OUT, "hdf5"))
    # A description of a shard of 3 examples of 8 tokens and 2 predictions in the layout's own
    # form (fuzz_hdf5_layout.cpp reads it): the shard it describes is a valid one.
    n, seq, preds, lengths = 3, 8, 2, (8, 5, 3)
    mask = [int(i < length) for length in lengths for i in range(seq)]
    ids = [(5 + e * seq + i) * m for e in range(n) for i, m in enumerate(mask[e * seq:(e + 1) * seq])]
    segments = [int(i >= length // 2) * m for length in lengths for i, m in enumerate([1] * length + [0] * (seq - length))]
    positions = [p for length in lengths for p in (1, length - 1)]
    labels = [9, 10, 11, 12, 13, 14]
    description = bytes([n, seq, preds] + [0] * 6 + ids + mask + segments + positions + labels + [0, 1, 0])
    open(os.path.join(OUT, "hdf5_layout", "shard.description"), "wb").write(description)

for d in ("safetensors", "metrics", "bertx", "cache") + (() if "--no-hdf5" in sys.argv else ("hdf5", "hdf5_layout")):
    if not os.listdir(os.path.join(OUT, d)):
        sys.exit(f"FAIL: no {d} seed was written")
shutil.rmtree(os.path.join(OUT, "scratch"))
print("seeds:", {d: len(os.listdir(os.path.join(OUT, d))) for d in sorted(os.listdir(OUT))})
