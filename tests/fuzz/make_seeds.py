"""Writes the seed files of the reader fuzz tests, made by bertc itself so that they follow the
current formats: a checkpoint, a batch and a metrics file of a short run of fuzz-tiny.toml
(safetensors/, metrics/), its program compiled for sm_80 (bertx/) with the NVRTC cache entries
that compiling wrote (cache/), and an HDF5 shard of a few documents (hdf5/). Configs need no
seeds: the fuzz test reads the repository's own.

usage: make_seeds.py BERTC SOURCE_DIR OUT_DIR
"""
import os
import shutil
import subprocess
import sys

BERTC, SOURCE, OUT = sys.argv[1:4]
CONFIG = os.path.join(SOURCE, "tests", "fuzz", "fuzz-tiny.toml")
shutil.rmtree(OUT, ignore_errors=True)
for d in ("safetensors", "metrics", "bertx", "cache", "hdf5", "scratch"):
    os.makedirs(os.path.join(OUT, d))
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(OUT, "scratch", "xdg"))


def bertc(*args):
    r = subprocess.run([BERTC, *args], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        sys.exit(f"FAIL: bertc {' '.join(args)} exited {r.returncode}:\n{r.stderr[-2000:]}")


run = os.path.join(OUT, "scratch", "run")
bertc("train", CONFIG, "--device", "cpu", "--checkpoint-dir", run)
shutil.copy(os.path.join(run, "metrics.jsonl"), os.path.join(OUT, "metrics"))
for f in os.listdir(run):
    if f.endswith(".safetensors"):
        shutil.copy(os.path.join(run, f), os.path.join(OUT, "safetensors"))
bertc("batch", CONFIG, "--index", "0", "-o", os.path.join(OUT, "safetensors", "batch.safetensors"))

bertc("compile", CONFIG, "--arch", "sm_80", "-o", os.path.join(OUT, "bertx", "fuzz-tiny.bertx"))
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

for d in ("safetensors", "metrics", "bertx", "cache") + (() if "--no-hdf5" in sys.argv else ("hdf5",)):
    if not os.listdir(os.path.join(OUT, d)):
        sys.exit(f"FAIL: no {d} seed was written")
shutil.rmtree(os.path.join(OUT, "scratch"))
print("seeds:", {d: len(os.listdir(os.path.join(OUT, d))) for d in sorted(os.listdir(OUT))})
