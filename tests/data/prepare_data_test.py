#!/usr/bin/env python3
"""bertc prepare-data end to end: the bundled corpus into shards, deterministic whatever the
threads, the same from .txt.gz as from .txt, and every refusal naming what to change; then
training from those shards: the text itself in as many text shards trains alike, a resumed run
repeats an uninterrupted one, 2 ranks train as 1 rank
with twice the accumulation, and a damaged shard is refused before anything trains.

usage: prepare_data_test.py BERTC SOURCE_DIR WORK_DIR
"""
import gzip
import json
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
if list(shards("one")) != [f"shard-{i:05d}.hdf5{sum}" for i in range(4) for sum in ("", ".xxh3")]:
    fail(f"expected shard-00000..3.hdf5 with their .xxh3 checksums and nothing else, got {list(shards('one'))}")
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

# A folder of files with no blank lines: each file one document (a round ends with its file).
os.makedirs(os.path.join(WORK, "whole-files"))
lines = [l for l in open(CORPUS, encoding="utf-8").read().split("\n") if l.strip()]
for i in range(3):
    open(os.path.join(WORK, "whole-files", f"doc{i}.txt"), "w").write("\n".join(lines[i * 100:(i + 1) * 100]) + "\n")
whole = prepare("from-whole-files", "--shards", "3", "--input", os.path.join(WORK, "whole-files")).stderr
if "prepare-data: 3 documents," not in whole:
    fail("three files without blank lines should be three documents:\n" + whole[-1000:])

# Refusals, each naming the fix, and no shard written by a refused run.
os.makedirs(os.path.join(WORK, "fake-gz"))
open(os.path.join(WORK, "fake-gz", "corpus.txt.gz"), "w").write("plain text\n")
open(os.path.join(WORK, "a-file"), "w").write("not a folder\n")
cases = [("fake", ["--input", os.path.join(WORK, "fake-gz")], "named .gz but not gzip-compressed"),
         ("a-file", ["--shards", "2"], "is a file: --output names a folder"),
         ("one", ["--shards", "4"], "already holds shards: choose an empty"),
         ("many", ["--shards", "5000"], "3000 document(s) for 5000 shards: every shard needs one at least"),
         ("small", ["--shards", "1", "--memory-mb", "1"], "more than the memory bound of 1 MiB: use more --shards"),
         ("none", ["--input", os.path.join(WORK, "absent")], "no such file or folder of training text")]
for out, flags, expected in cases:
    before = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    p = prepare(out, *flags, check=False)
    if p.returncode == 0 or expected not in p.stderr:
        fail(f"prepare-data {' '.join(flags)} was not refused with '{expected}' (exit {p.returncode}):\n{p.stderr[-1500:]}")
    after = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    if after != before:
        fail(f"the refused run {' '.join(flags)} changed {out}/")
    print("refused:", next(l for l in p.stderr.splitlines() if expected in l)[:160])


# Training from the shards: the config with data pointing at them.
ENV = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
if os.geteuid() == 0:
    ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
text = open(CONFIG).read()
text = re.sub(r'^data = .*$', f'data = "{os.path.join(WORK, "one")}"', text, flags=re.M)
text = re.sub(r'^vocab = "[^"]*/([^/"]+)"', lambda m: f'vocab = "{SOURCE}/examples/data/{m.group(1)}"', text, flags=re.M)
for key, value in (("steps", 20), ("checkpoint_every", 10), ("batch_size", 2), ("gradient_accumulation_steps", 2)):
    text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M) if re.search(rf"^{key} = ", text, flags=re.M) \
        else text.replace("[train]\n", f"[train]\n{key} = {value}\n", 1)
SHARDED = os.path.join(WORK, "sharded.toml")
open(SHARDED, "w").write(text)


def train(run, *flags, ranks=1, config=SHARDED, check=True):
    cmd = [BERTC, "train", config, "--device", "cpu", "--checkpoint-dir", os.path.join(WORK, run), *flags]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), *cmd]
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p


def losses(run):
    return [(m["loss"], m["grad_norm"]) for m in map(json.loads, open(os.path.join(WORK, run, "metrics.jsonl")))]


log = train("straight").stderr
if "data: 4 shard(s) in" not in log or "a shard at a time" not in log:
    fail("training did not read the shards:\n" + log[-1500:])
# Text trains as its shards do: text_shards = 4 makes in memory the examples prepare-data --shards 4
# wrote, and the trainer reads them in the same order, so every loss and gradient norm is equal.
as_text = re.sub(r'^data = .*$', f'data = "{CORPUS}"', text, flags=re.M).replace("[train]\n", "[train]\ntext_shards = 4\n", 1)
open(os.path.join(WORK, "text.toml"), "w").write(as_text)
text_log = train("from-text", config=os.path.join(WORK, "text.toml")).stderr
if "in 4 text shard(s)" not in text_log:
    fail("training from text did not make 4 text shards:\n" + text_log[-1500:])
if losses("from-text") != losses("straight"):
    fail(f"text with text_shards = 4 trained otherwise than its 4 shards:\n{losses('from-text')}\n{losses('straight')}")
# The 20 steps read only the first shard: the micro-batches of the whole first epoch and into
# the second (every shard, in its turn, and the read-ahead) must be equal too.
counted = [re.search(r", (\d+) examples, a shard at a time", l) for l in (log, text_log)]
if not all(counted) or counted[0].group(1) != counted[1].group(1):
    fail(f"text and shards hold different numbers of examples: {[c and c.group(1) for c in counted]}")
examples = int(counted[0].group(1))
micro = examples // 2  # batch_size 2
for index in sorted({0, micro // 5, 2 * micro // 5, 3 * micro // 5, 4 * micro // 5, micro - 1, micro + 3}):
    outs = []
    for name, config in (("shards", SHARDED), ("text", os.path.join(WORK, "text.toml"))):
        out = os.path.join(WORK, f"batch-{name}-{index}.safetensors")
        subprocess.run([BERTC, "batch", config, "--index", str(index), "-o", out], check=True, capture_output=True,
                       timeout=300)
        outs.append(open(out, "rb").read())
    if outs[0] != outs[1]:
        fail(f"micro-batch {index} of {micro} differs between the text and its shards")
# A resumed run reads the same data stream: another text_shards is refused, naming it.
three = as_text.replace("text_shards = 4", "text_shards = 3")
open(os.path.join(WORK, "text3.toml"), "w").write(three)
p = train("from-text", "--resume", "--steps", "30", config=os.path.join(WORK, "text3.toml"), check=False)
if p.returncode == 0 or not re.search(r"trained on \d+ examples in 4 shard\(s\), and this run's data is \d+ examples in 3", p.stderr):
    fail(f"resuming with another text_shards was not refused (exit {p.returncode}):\n{p.stderr[-1500:]}")
train("split", "--until", "10")
train("split", "--resume")
if losses("straight") != losses("split"):
    fail("resuming at step 10 from shards did not repeat the uninterrupted run")
# Micro-batches dealt round the ranks: 2 ranks of 1 accumulation step train on exactly the
# examples of 1 rank of 2. The sums' order differs (as in tests/distributed), so within 1e-5.
two = re.sub(r"^gradient_accumulation_steps = .*$", "gradient_accumulation_steps = 1", text, flags=re.M)
open(os.path.join(WORK, "two.toml"), "w").write(two)
if shutil.which("mpirun"):
    train("two-ranks", ranks=2, config=os.path.join(WORK, "two.toml"))
    worst = max(abs(a[0] - b[0]) / a[0] for a, b in zip(losses("straight"), losses("two-ranks")))
    if worst > 1e-5:
        fail(f"2 ranks from shards differ from 1 rank x 2 accumulation by {worst:.3g} in loss")
    print(f"2 ranks from shards vs 1 rank x 2: loss within {worst:.2g}")
# A damaged shard among good ones: refused before the first step, naming it.
damaged = os.path.join(WORK, "damaged")
shutil.copytree(os.path.join(WORK, "one"), damaged)
with open(os.path.join(damaged, "shard-00002.hdf5"), "r+b") as f:
    f.truncate(1000)
bad = open(SHARDED).read().replace(os.path.join(WORK, "one"), damaged)
open(os.path.join(WORK, "damaged.toml"), "w").write(bad)
p = train("damaged-run", config=os.path.join(WORK, "damaged.toml"), check=False)
if p.returncode == 0 or "shard-00002.hdf5: does not match its checksum" not in p.stderr or "step 1/" in p.stderr:
    fail(f"a truncated shard was not refused by its checksum before training (exit {p.returncode}):\n{p.stderr[-1500:]}")
print("refused:", next(l for l in p.stderr.splitlines() if "shard-00002" in l)[:160])
# Without its checksum file (a shard from elsewhere) libhdf5 finds the damage.
os.remove(os.path.join(damaged, "shard-00002.hdf5.xxh3"))
p = train("damaged-run-2", config=os.path.join(WORK, "damaged.toml"), check=False)
if p.returncode == 0 or "shard-00002.hdf5: not an HDF5 file, or truncated" not in p.stderr or "step 1/" in p.stderr:
    fail(f"a truncated shard without checksum was not refused before training (exit {p.returncode}):\n{p.stderr[-1500:]}")
print("PASS")
