#!/usr/bin/env python3
"""bertc prepare-data end to end: the bundled corpus into shards, deterministic whatever the
threads, the same from .txt.gz as from .txt, and every refusal naming what to change.

usage: prepare_data_test.py BERTC SOURCE_DIR WORK_DIR
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

BERTC, SOURCE, WORK = sys.argv[1:4]
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
CONFIG = os.path.join(SOURCE, "tests", "lit", "Inputs", "test-tiny.toml")
CORPUS = os.path.join(SOURCE, "examples", "data", "corpus.txt")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def prepare(out, *flags, check=True):
    p = subprocess.run([BERTC, "prepare-data", CONFIG, "-o", os.path.join(WORK, out), *flags],
                       capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        fail(f"prepare-data {' '.join(flags)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p


def shards(out):
    folder = os.path.join(WORK, out)
    return {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}


# Deterministic: 1 thread and 2 write the same bytes (the shards depend on text, vocabulary,
# options and the shard count only); and every shard is there, no scratch left behind.
one = prepare("one", "--shards", "4", "--threads", "1").stderr
prepare("two", "--shards", "4", "--threads", "2")
if list(shards("one")) != [f"shard-{i:05d}.hdf5" for i in range(4)]:
    fail(f"expected shard-00000..3.hdf5 and nothing else, got {list(shards('one'))}")
if shards("one") != shards("two"):
    fail("1 and 2 threads wrote different shards")
said = re.search(r"prepare-data: (\d+) documents, (\d+) sentences, (\d+) tokens .* -> (\d+) examples in 4 shards", one)
if not said or int(said.group(1)) != 3000 or int(said.group(4)) < 3000:
    fail("the summary does not count the corpus's 3000 documents and their examples:\n" + one[-1000:])
print("summary:", next(l for l in one.splitlines() if "documents," in l)[:200])

# The same text gzip-compressed, in a folder, gives the same shards.
os.makedirs(os.path.join(WORK, "gz"))
with open(CORPUS, "rb") as src, gzip.open(os.path.join(WORK, "gz", "corpus.txt.gz"), "wb") as dst:
    dst.write(src.read())
prepare("from-gz", "--shards", "4", "--input", os.path.join(WORK, "gz"))
if shards("from-gz") != shards("one"):
    fail("the .txt.gz input gave other shards than the .txt")

# Refusals, each naming the fix, and no shard written by a refused run.
cases = [("one", ["--shards", "4"], "already holds shards: choose an empty"),
         ("many", ["--shards", "5000"], "3000 document(s) for 5000 shards: every shard needs one at least"),
         ("small", ["--shards", "1", "--memory-mb", "1"], "more than the memory bound of 1 MiB: use more --shards"),
         ("none", ["--input", os.path.join(WORK, "absent")], "no such file or folder of text")]
for out, flags, expected in cases:
    before = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    p = prepare(out, *flags, check=False)
    if p.returncode == 0 or expected not in p.stderr:
        fail(f"prepare-data {' '.join(flags)} was not refused with '{expected}' (exit {p.returncode}):\n{p.stderr[-1500:]}")
    after = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    if after != before:
        fail(f"the refused run {' '.join(flags)} changed {out}/")
    print("refused:", next(l for l in p.stderr.splitlines() if expected in l)[:160])
print("PASS")
