#!/usr/bin/env python3
"""bertc prepare-data end to end: the bundled corpus into shards, deterministic whatever the
threads, the same from .txt.gz as from .txt, and every refusal naming what to change (a .gz cut
short, input that is not text, no text at all; a full disk and a signal, leaving nothing behind);
then training from those shards: the text itself in as many text shards trains alike, a resumed
run repeats an uninterrupted one, 2 ranks train as 1 rank with twice the accumulation, and a
damaged shard, shards of another vocabulary or masking, a folder mixing shards, a shard replaced
by a folder or missing beside its checksum are refused before anything trains.

usage: prepare_data_test.py BERTC SOURCE_DIR WORK_DIR
"""
import gzip
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

BERTC, SOURCE, WORK = sys.argv[1:4]
# The signals this test sends must reach bertc as sent: a runner that started it with SIGINT or
# SIGHUP ignored (a background job of a script, nohup) would pass that on, and bertc keeps an
# ignored signal ignored.
for inherited in (signal.SIGINT, signal.SIGHUP):
    signal.signal(inherited, signal.SIG_DFL)
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
whole = prepare("from-whole-files", "--shards", "1", "--input", os.path.join(WORK, "whole-files")).stderr
if "prepare-data: 3 documents," not in whole:
    fail("three files without blank lines should be three documents:\n" + whole[-1000:])

# Refusals, each naming the fix, and no shard written by a refused run.
os.makedirs(os.path.join(WORK, "fake-gz"))
open(os.path.join(WORK, "fake-gz", "corpus.txt.gz"), "w").write("plain text\n")
# A .gz cut short (half of it: an interrupted download), alone and in a folder: refused, not read
# as a smaller corpus.
whole_gz = open(os.path.join(WORK, "gz", "corpus.txt.gz"), "rb").read()
os.makedirs(os.path.join(WORK, "cut-gz"))
open(os.path.join(WORK, "cut-gz", "corpus.txt.gz"), "wb").write(whole_gz[:len(whole_gz) // 2])
random_bytes = random.Random(3).randbytes(300000)
open(os.path.join(WORK, "random.txt"), "wb").write(random_bytes)
open(os.path.join(WORK, "empty.txt"), "w").close()
open(os.path.join(WORK, "a-file"), "w").write("not a folder\n")
open(os.path.join(WORK, "one-document.txt"), "w").write("the cat sat .\nthe dog ran .\n")
cases = [("fake", ["--input", os.path.join(WORK, "fake-gz")], "named .gz but its first bytes are not gzip's (1f 8b)"),
         ("a-file", ["--shards", "2"], "is a file: --output names a folder"),
         ("one", ["--shards", "4"], "already holds shards: choose an empty"),
         ("many", ["--shards", "5000"], "3000 document(s) for 5000 shards: every shard needs 2 at least, for its "
          "random next sentences to come from another document (use --shards 1500 or fewer)"),
         ("one-document", ["--input", os.path.join(WORK, "one-document.txt"), "--shards", "1"],
          "1 document: next-sentence prediction takes its random sentences from another document, and there is none"),
         ("tiny-bound", ["--shards", "1", "--memory-mb", "1"], "--shards 1 under --memory-mb 1: making them keeps a "
          "file open per shard, about 16 KiB with their buffers, and a shard is written from a block of rows of about "
          "1536 KiB: raise --memory-mb to 2 or more"),
         ("small", ["--shards", "1", "--memory-mb", "6"], "more than the memory bound of 6 MiB: use about "),
         ("none", ["--input", os.path.join(WORK, "absent")], "no such file or folder of training text"),
         ("cut", ["--input", os.path.join(WORK, "cut-gz", "corpus.txt.gz")], "the gzip stream ends early: the file is "
          f"cut short after {len(whole_gz) // 2} bytes"),
         ("cut-folder", ["--input", os.path.join(WORK, "cut-gz")], "the gzip stream ends early"),
         ("random", ["--input", os.path.join(WORK, "random.txt")], "random.txt: is not text:"),
         ("empty", ["--input", os.path.join(WORK, "empty.txt"), "--shards", "1"], "empty.txt: no text: no document in it")]
for out, flags, expected in cases:
    before = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    p = prepare(out, *flags, check=False)
    if p.returncode == 0 or expected not in p.stderr:
        fail(f"prepare-data {' '.join(flags)} was not refused with '{expected}' (exit {p.returncode}):\n{p.stderr[-1500:]}")
    after = shards(out) if os.path.isdir(os.path.join(WORK, out)) else None
    if after != before:
        fail(f"the refused run {' '.join(flags)} changed {out}/")
    print("refused:", next(l for l in p.stderr.splitlines() if expected in l)[:160])


# One document too large for the memory bound (the whole corpus without a blank line): more shards
# cannot split a document, so the advice is a larger bound, and that bound works.
one_doc = os.path.join(WORK, "one-doc.txt")
open(one_doc, "w").write("\n".join(lines) + "\n\nthe cat sat .\nthe dog ran .\n")  # (and a small second one)
p = prepare("one-doc", "--input", one_doc, "--shards", "1", "--memory-mb", "8", check=False)
advised = re.search(r"document 1 \(\d+ sentences, \d+ tokens\) alone needs about \d+ MiB .* never split between "
                    r"shards: raise --memory-mb to (\d+) or more", p.stderr)
if p.returncode == 0 or not advised:
    fail(f"a document too large for the bound was not refused naming a larger bound (exit {p.returncode}):\n{p.stderr[-1500:]}")
prepare("one-doc", "--input", one_doc, "--shards", "1", "--memory-mb", advised.group(1))
print(f"one large document: refused at 8 MiB, prepared with the advised --memory-mb {advised.group(1)}")

# A shard past the bound while the text is read: the advice names figures projected to the whole
# text (it named none), and each of them, applied alone, works.
p = subprocess.run([BERTC, "prepare-data", CONFIG, "-o", os.path.join(WORK, "bound"), "--shards", "2", "--memory-mb", "3"],
                   capture_output=True, text=True, timeout=600)
advice = re.search(r"use about (\d+) --shards, or raise --memory-mb to about (\d+)", p.stderr)
if p.returncode == 0 or not advice:
    fail(f"a shard past a 3 MiB bound was not refused with figures (exit {p.returncode}):\n{p.stderr[-1500:]}")
prepare("bound-shards", "--shards", advice.group(1), "--memory-mb", "3")
prepare("bound-memory", "--shards", "2", "--memory-mb", advice.group(2))
print(f"shard past the bound: advised --shards {advice.group(1)} or --memory-mb {advice.group(2)}; both prepared")

# A full disk while the shards are written (the file size limit here, which fails a write as a full
# disk does, with EFBIG; and a small tmpfs where this machine lets a test mount one): an error
# naming the file and the cause, exit 1 (libhdf5 crashed at exit on the file it could not flush),
# and nothing left of the run: the folder it made is gone. With dupe_factor 5 a shard (~790 KB)
# is larger than a pass-1 scratch file (~420 KB), so the limits below fail the shard's write.
DUPE5 = os.path.join(WORK, "dupe5.toml")
open(DUPE5, "w").write(open(CONFIG).read().replace("dupe_factor = 1", "dupe_factor = 5")
                       .replace('"../../../examples/', f'"{SOURCE}/examples/'))


def limited():
    # (SIGXFSZ left at its default, which kills: bertc ignores it itself, so that the write fails)
    resource.setrlimit(resource.RLIMIT_FSIZE, (500_000, 500_000))


full = os.path.join(WORK, "full")
p = subprocess.run([BERTC, "prepare-data", DUPE5, "-o", full, "--shards", "2"], capture_output=True, text=True,
                   timeout=600, preexec_fn=limited)
if p.returncode != 1 or ".hdf5.tmp: writing it failed after" not in p.stderr or "File too large" not in p.stderr or \
        os.path.exists(full):
    fail(f"a write failing (file size limit) was not a clean error leaving nothing (exit {p.returncode}, "
         f"{full} {'left' if os.path.exists(full) else 'gone'}):\n{p.stderr[-1500:]}")
print("file size limit:", p.stderr.strip().splitlines()[-1][:200])
# ... and one that pass 1's scratch passes (one shard: 830 KB of token ids) is said as the limit it
# is, not as a full disk; its advice, more --shards (smaller files), then works under that limit.
scratch_limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))
p = subprocess.run([BERTC, "prepare-data", CONFIG, "-o", os.path.join(WORK, "ulimit1"), "--shards", "1"],
                   capture_output=True, text=True, timeout=600, preexec_fn=scratch_limit)
if p.returncode != 1 or "writing this run's scratch failed: File too large" not in p.stderr or \
        "raise the file size limit (ulimit -f), or use more --shards (smaller files)" not in p.stderr:
    fail(f"a scratch file past the file size limit: exit {p.returncode}, not said as the limit:\n{p.stderr[-1500:]}")
p = subprocess.run([BERTC, "prepare-data", CONFIG, "-o", os.path.join(WORK, "ulimit4"), "--shards", "4"],
                   capture_output=True, text=True, timeout=600, preexec_fn=scratch_limit)
if p.returncode != 0:
    fail(f"the advised --shards 4 failed under the same file size limit:\n{p.stderr[-1500:]}")
# A full tmpfs, in pass 2 (a shard's file) and in pass 1 (the scratch, with dupe_factor 1 and one
# shard): a clean error naming the room the whole run needs; a tmpfs of that size then holds it.


def on_tmpfs(name, size, config, shards):
    mount = os.path.join(WORK, name)
    os.makedirs(mount)
    return subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs '{mount}' && "
                           f"'{BERTC}' prepare-data '{config}' -o '{mount}/out' --shards {shards}; echo \"exit $?\"; "
                           f"ls -A '{mount}'"], capture_output=True, text=True, timeout=600)


for name, config, shards, cause in (("tmpfs", DUPE5, 2, ".hdf5.tmp: writing it failed after"),
                                    ("tmpfs-scratch", CONFIG, 1, ".ids: writing this run's scratch failed")):
    mounted = on_tmpfs(name, "300k" if shards == 1 else "1200k", config, shards)
    if "exit " not in mounted.stdout:
        print("small tmpfs: skipped (no mount namespace here:", mounted.stderr.strip()[:120], ")")
        break
    advised = re.search(r"this run needs about (\d+) MiB free there .* choose an --output with \1 MiB free",
                        mounted.stderr)
    if mounted.stdout.strip() != "exit 1" or cause not in mounted.stderr or \
            "No space left on device" not in mounted.stderr or not advised:
        fail(f"prepare-data on a full tmpfs: expected exit 1, an ENOSPC error ({cause}) naming the room it needs "
             f"and nothing left:\n{mounted.stdout}\n{mounted.stderr[-1500:]}")
    print("small tmpfs:", mounted.stderr.strip().splitlines()[-1][:400])
    again = on_tmpfs(name + "-advised", f"{advised.group(1)}m", config, shards)
    if again.stdout.splitlines()[:1] != ["exit 0"]:
        fail(f"prepare-data on a tmpfs of the advised {advised.group(1)} MiB failed:\n{again.stdout}\n"
             f"{again.stderr[-1500:]}")
    print(f"  on the advised {advised.group(1)} MiB: prepared")

# A signal stops prepare-data cleanly: it says so, exits 128 + the signal, leaves nothing. The
# text is made large enough (20 copies) that the signal comes while it works.
big = os.path.join(WORK, "big.txt")
with open(big, "w") as out:
    corpus = open(CORPUS).read()
    for _ in range(20):
        out.write(corpus + "\n")
for sig, code, made in ((signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)):
    target = os.path.join(WORK, f"signalled-{sig.name}")
    if not made:
        os.makedirs(target)  # (an empty folder given: it stays, empty)
    proc = subprocess.Popen([BERTC, "prepare-data", CONFIG, "-o", target, "--input", big, "--shards", "4",
                             "--threads", "1"], stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(sig)
    err = proc.communicate(timeout=600)[1]
    left = sorted(os.listdir(target)) if os.path.isdir(target) else None
    if proc.returncode != code or f"prepare-data: stopped by {sig.name}" not in err or \
            (left is not None if made else left != []):
        fail(f"{sig.name} to prepare-data: exit {proc.returncode} (expected {code}), left {left}:\n{err[-1500:]}")
    print(f"{sig.name}:", next(l for l in err.splitlines() if "stopped by" in l)[:200])
# Two signals at once (sent while the process is stopped, so that both arrive before it can act on
# the first): it ends at once, says what it left and that the next run removes it; the next run
# into the folder does, says so, and makes the shards.
target = os.path.join(WORK, "signalled-twice")
proc = subprocess.Popen([BERTC, "prepare-data", CONFIG, "-o", target, "--input", big, "--shards", "4",
                         "--threads", "1"], stderr=subprocess.PIPE, text=True)
while not os.path.isdir(os.path.join(target, ".prepare-scratch")):
    if proc.poll() is not None:
        fail(f"prepare-data ended before it made its scratch:\n{proc.stderr.read()[-1500:]}")
    time.sleep(0.01)
proc.send_signal(signal.SIGSTOP)
proc.send_signal(signal.SIGINT)
proc.send_signal(signal.SIGTERM)
proc.send_signal(signal.SIGCONT)
err = proc.communicate(timeout=600)[1]
if proc.returncode not in (130, 143) or "this run's scratch and lock are left in the output folder, and the next " \
        "prepare-data into it removes them" not in err:
    fail(f"two signals to prepare-data: exit {proc.returncode}, no word of what it left:\n{err[-1500:]}")
again = prepare("signalled-twice", "--input", big, "--shards", "4")
if "removed the scratch a stopped run left in" not in again.stderr or \
        sorted(os.listdir(target)) != [f"shard-{i:05d}.hdf5{x}" for i in range(4) for x in ("", ".xxh3")]:
    fail(f"the run after one ended at once did not say it removed the scratch, or left it:\n{again.stderr[-1500:]}")
print("two signals to prepare-data: ended at once; the next run removed the scratch and made the shards")
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
# A set with a shard missing (a copy that did not finish) is refused before step 1, naming it.
import shutil
shutil.copytree(os.path.join(WORK, "one"), os.path.join(WORK, "partial"))
for name in ("shard-00002.hdf5", "shard-00002.hdf5.xxh3"):
    os.remove(os.path.join(WORK, "partial", name))
partial = train("partial-run", "--data", os.path.join(WORK, "partial"), check=False)
if partial.returncode != 1 or "1 of the 4 shards that bertc prepare-data made" not in partial.stderr or \
        "(shard-00002.hdf5)" not in partial.stderr or "step 1/" in partial.stderr:
    fail(f"a set missing a shard: exit {partial.returncode}:\n{partial.stderr[-1500:]}")
# One shard given of a set whose others are beside it: the folder is named (it said the others were
# not here, to be copied back); the advice trains (the set was trained above as "one").
lone = train("lone-run", "--data", os.path.join(WORK, "one", "shard-00001.hdf5"), check=False)
if lone.returncode != 1 or "shard-00001.hdf5: one shard of a set of 4 that bertc prepare-data made, and 3 more " \
        ".hdf5 file(s) are beside it: train on the set, --data " + os.path.join(WORK, "one") not in lone.stderr:
    fail(f"one shard of a set given: exit {lone.returncode}:\n{lone.stderr[-1500:]}")
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
# Rows of several examples: prepare-data with packing = "pack" records the rows it placed each
# shard's examples in; training reads them as recorded, and its micro-batches are the text's with
# the same packing, byte for byte. The same shards with packing = "none" read as one example a row:
# the micro-batches of the shards made without rows.
rows_text = re.sub(r'^data = .*$', f'data = "{CORPUS}"', open(CONFIG).read(), flags=re.M)
rows_text = re.sub(r'^vocab = "[^"]*/([^/"]+)"', lambda m: f'vocab = "{SOURCE}/examples/data/{m.group(1)}"', rows_text,
                   flags=re.M).replace("[train]\n", "[train]\npacking = \"pack\"\ntext_shards = 4\n", 1)
open(os.path.join(WORK, "rows-text.toml"), "w").write(rows_text)
made = subprocess.run([BERTC, "prepare-data", os.path.join(WORK, "rows-text.toml"), "-o", os.path.join(WORK, "rows"),
                       "--shards", "4"], capture_output=True, text=True, timeout=600)
if made.returncode != 0 or not re.search(r"placed in \d+ rows of up to 3 \(\d\.\d\d a row", made.stderr):
    fail(f"prepare-data with packing = \"pack\" (exit {made.returncode}) did not say its rows:\n{made.stderr[-1500:]}")
open(os.path.join(WORK, "rows-shards.toml"), "w").write(
    re.sub(r'^data = .*$', f'data = "{os.path.join(WORK, "rows")}"', rows_text, flags=re.M))
open(os.path.join(WORK, "rows-as-examples.toml"), "w").write(
    re.sub(r'^data = .*$', f'data = "{os.path.join(WORK, "rows")}"', as_text, flags=re.M))
for index in (0, 7, 40):
    outs = []
    for name in ("rows-text", "rows-shards", "rows-as-examples", "text"):
        out = os.path.join(WORK, f"batch-{name}-{index}.safetensors")
        subprocess.run([BERTC, "batch", os.path.join(WORK, name + ".toml"), "--index", str(index), "-o", out],
                       check=True, capture_output=True, timeout=300)
        outs.append(open(out, "rb").read())
    if outs[0] != outs[1]:
        fail(f"micro-batch {index} of rows differs between the text and its shards with rows")
    if outs[2] != outs[3]:
        fail(f"micro-batch {index}: shards with rows read with packing = \"none\" differ from the text's examples")
    if outs[0] == outs[3]:
        fail(f"micro-batch {index}: rows and one example a row gave the same batch")
print("prepare-data with packing = \"pack\": rows recorded, trained as the text's rows; read one a row with none")
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
# A shard copied under another name without its .xxh3 (no checksum to match) is the same shard
# by its record: refused before step 1 (it was trained twice as often as the others, said only as
# a shard read unchecked).
twice = os.path.join(WORK, "twice-bare")
shutil.copytree(os.path.join(WORK, "one"), twice)
shutil.copy(os.path.join(twice, "shard-00001.hdf5"), os.path.join(twice, "dup.hdf5"))
dup = train("twice-bare-run", "--data", twice, check=False)
if dup.returncode != 1 or not re.search(r"(dup|shard-00001).hdf5 and .*(dup|shard-00001).hdf5 are the same shard \(the same record \(shard 1 "
                                        r"of the 4 bertc prepare-data made as set [0-9a-f]+\)\)", dup.stderr) or \
        "step 1/" in dup.stderr:
    fail(f"a shard copied without its checksum was not refused as the same shard:\n{dup.stderr[-1500:]}")
# Damage inside a shard copied without its .xxh3: found before step 1 (the shards without a
# checksum are read whole first), with a way on that works (leaving the shard out does not: its set
# would be short of it). It was found mid-run, when the shard's turn came.
bare_damaged = os.path.join(WORK, "bare-damaged")
shutil.copytree(os.path.join(WORK, "one"), bare_damaged, ignore=shutil.ignore_patterns("*.xxh3"))
with open(os.path.join(bare_damaged, "shard-00003.hdf5"), "r+b") as f:
    f.seek(os.path.getsize(f.name) // 2)
    byte = f.read(1)
    f.seek(-1, os.SEEK_CUR)
    f.write(bytes([byte[0] ^ 0x40]))
hit = train("bare-damaged-run", "--data", bare_damaged, check=False)
if hit.returncode != 1 or "shard-00003.hdf5" not in hit.stderr or "step 1/" in hit.stderr or \
        "put back a good copy of it (with its .xxh3)" not in hit.stderr:
    fail(f"damage in a shard without its checksum was not found before step 1:\n{hit.stderr[-1500:]}")
shutil.copy(os.path.join(WORK, "one", "shard-00003.hdf5"), os.path.join(bare_damaged, "shard-00003.hdf5"))
shutil.copy(os.path.join(WORK, "one", "shard-00003.hdf5.xxh3"), os.path.join(bare_damaged, "shard-00003.hdf5.xxh3"))
train("bare-damaged-fixed", "--data", bare_damaged, "--steps", "1")
# Two sets made from one text (other --shards) in one folder: refused before step 1 by the text each
# records (the text was trained twice, said nowhere).
prepare("halves", "--shards", "2")
both = os.path.join(WORK, "one-text-twice")
shutil.copytree(os.path.join(WORK, "one"), both)
for name in os.listdir(os.path.join(WORK, "halves")):
    shutil.copy(os.path.join(WORK, "halves", name), os.path.join(both, "half-" + name))
twice_text = train("one-text-twice-run", "--data", both, check=False)
if twice_text.returncode != 1 or "are shards of two sets bertc prepare-data made from the same text" not in \
        twice_text.stderr or "step 1/" in twice_text.stderr:
    fail(f"two sets of one text were not refused:\n{twice_text.stderr[-1500:]}")
# The same shards copied without their .xxh3 files are the same data: the resumed run goes on (their
# identity is their bytes' checksum, computed where the file beside them is missing), saying they
# are read unchecked.
copied = os.path.join(WORK, "copied-bare")
shutil.copytree(os.path.join(WORK, "one"), copied, ignore=shutil.ignore_patterns("*.xxh3"))
train("moved", "--until", "10")
moved = train("moved", "--resume", "--data", copied).stderr
if "have no checksum beside them" not in moved or losses("straight") != losses("moved"):
    fail(f"resuming on the same shards copied without their checksums did not repeat the run:\n{moved[-1500:]}")
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


# Shards carry what makes them compatible (vocabulary, largest token, masking): every shard of a
# set is checked against the run before the first step. Shards of a vocabulary of the same size
# with two tokens swapped (which trains, on the wrong tokens, without this check):
tokens = open(os.path.join(SOURCE, "examples", "data", "vocab.txt")).read().split("\n")
tokens[100], tokens[101] = tokens[101], tokens[100]
swapped = os.path.join(WORK, "swapped-vocab.txt")
open(swapped, "w").write("\n".join(tokens))
prepare("other-vocab", "--shards", "4", "--vocab", swapped)


def refused_before_training(name, folder_or_config, expected, edit=None):
    config = open(SHARDED).read().replace(os.path.join(WORK, "one"), folder_or_config)
    if edit:
        config = edit(config)
    path = os.path.join(WORK, f"{name}.toml")
    open(path, "w").write(config)
    p = train(f"{name}-run", config=path, check=False)
    if p.returncode == 0 or not re.search(expected, p.stderr) or "step 1/" in p.stderr:
        fail(f"{name}: not refused before training with /{expected}/ (exit {p.returncode}):\n{p.stderr[-1500:]}")
    print(f"refused ({name}):", next(l for l in p.stderr.splitlines() if "error" in l)[:220])


refused_before_training("other-vocab", os.path.join(WORK, "other-vocab"),
                        r"is not the one shard .*shard-00000.hdf5 was made with, .*swapped-vocab.txt \(317 tokens, "
                        r"xxh3 [0-9a-f]+\) \(the same size.*prepare the shards again with this run's vocabulary "
                        r"from the text they came from \(bertc prepare-data CONFIG --input TEXT --vocab .*vocab.txt -o NEW_DIR\), "
                        r"or train with the shards' "
                        r"\(.*swapped-vocab.txt\)")
mixed = os.path.join(WORK, "mixed")
shutil.copytree(os.path.join(WORK, "one"), mixed)
for suffix in ("", ".xxh3"):
    shutil.copy(os.path.join(WORK, "other-vocab", "shard-00000.hdf5" + suffix), os.path.join(mixed, "shard-00004.hdf5" + suffix))
refused_before_training("mixed", mixed, r"the shards are of 2 kinds, prepared differently: 4 shard\(s\) of .*; 1 shard")
# The fix said is one that holds: the whole set's kind is named to keep, and with the other moved out
# the folder trains; where no kind is a whole set, moving one out is not advised (what is left was
# refused next as an incomplete set), the folders prepare-data wrote are.
refused_before_training("mixed-keep", mixed, r"keep the kind of .*mixed/shard-0000[0-3].hdf5 \(a whole set\) and move the "
                        r"others out of the folder")
for suffix in ("", ".xxh3"):
    os.remove(os.path.join(mixed, "shard-00004.hdf5" + suffix))
train("mixed-kept", "--data", mixed, "--steps", "1")
halves = os.path.join(WORK, "mixed-halves")
os.makedirs(halves)
for i in range(2):
    for suffix in ("", ".xxh3"):
        shutil.copy(os.path.join(WORK, "one", f"shard-0000{i}.hdf5" + suffix), os.path.join(halves, f"shard-0000{i}.hdf5" + suffix))
        shutil.copy(os.path.join(WORK, "other-vocab", "shard-00000.hdf5" + suffix) if i == 0 else
                    os.path.join(WORK, "other-vocab", "shard-00001.hdf5" + suffix), os.path.join(halves, f"shard-0000{i + 2}.hdf5" + suffix))
refused_before_training("mixed-halves", halves, r"no kind here is a whole set of prepare-data's, so give --data the "
                        r"folder prepare-data wrote one kind into")
# A checksum file of another shard beside a good shard: said as a possible cause, and putting back
# both (the shard and its .xxh3) trains (putting back the shard alone, as advised, changed nothing).
sums = os.path.join(WORK, "other-sum")
shutil.copytree(os.path.join(WORK, "one"), sums)
shutil.copy(os.path.join(sums, "shard-00000.hdf5.xxh3"), os.path.join(sums, "shard-00001.hdf5.xxh3"))
refused_before_training("other-sum", sums, r"shard-00001.hdf5: does not match its checksum \(shard-00001.hdf5.xxh3\): the "
                        r"shard is damaged or was changed, or the checksum file is another shard's; put back good "
                        r"copies of both")
for suffix in ("", ".xxh3"):
    shutil.copy(os.path.join(WORK, "one", "shard-00001.hdf5" + suffix), os.path.join(sums, "shard-00001.hdf5" + suffix))
train("other-sum-fixed", "--data", sums, "--steps", "1")
refused_before_training("masking", os.path.join(WORK, "one"), r"prepared with masked_lm_prob = 0.15, and \[train\] "
                        r"masked_lm_prob is 0.2 \(a shard's masks are made when it is prepared\): set masked_lm_prob = 0.15",
                        lambda c: c.replace("[train]\n", "[train]\nmasked_lm_prob = 0.2\n", 1))
# (a run's value a last digit off the shards': both said as read back, the advice one that differs
# from the run's; six digits said 0.15 for both, and "set masked_lm_prob = 0.15" changed nothing)
refused_before_training("masking-digit", os.path.join(WORK, "one"), r"prepared with masked_lm_prob = 0.15, and "
                        r"\[train\] masked_lm_prob is 0.15000000000000002 \(a shard's masks are made when it is "
                        r"prepared\): set masked_lm_prob = 0.15,",
                        lambda c: c.replace("[train]\n", "[train]\nmasked_lm_prob = 0.15000000000000002\n", 1))
replaced = os.path.join(WORK, "replaced")
shutil.copytree(os.path.join(WORK, "one"), replaced)
os.remove(os.path.join(replaced, "shard-00001.hdf5"))
os.makedirs(os.path.join(replaced, "shard-00001.hdf5"))
refused_before_training("replaced", replaced, r"shard-00001.hdf5: named as a shard but not a file \(a folder\)")
shutil.rmtree(os.path.join(replaced, "shard-00001.hdf5"))
refused_before_training("missing", replaced, r"shard-00001.hdf5.xxh3: a shard's checksum, and its shard "
                        r"shard-00001.hdf5 is missing")
# Nothing that looks like a shard, its checksum or text is left out without a word: a checksum
# that is a folder, a folder of shards inside, text beside shards are refused; a shard named in
# capitals is read (all 4 shards' examples).
# Shards edited (h5py, as a user's script or another tool writes them): what no bertc or NVIDIA
# shard holds is refused before the first step, where it trained on exit 0 — a token id past the
# run's vocabulary though below a padded vocab_size (rows no token has), a token past the largest a
# shard records (its data changed since it was made), a masked position given twice (its token's
# loss counted twice). Debian's python3-h5py (scripts/setup.sh), run by the Python that has it.
H5PY_PYTHON = next((p for p in (sys.executable, "/usr/bin/python3")
                    if os.path.exists(p) and subprocess.run([p, "-c", "import h5py"], capture_output=True).returncode == 0),
                   None)
if H5PY_PYTHON is None:
    fail("no Python here imports h5py: install python3-h5py (scripts/setup.sh does)")


def edited(name, edit, keep_records=True):
    """A copy of the set "one" without its checksums (as copied by hand), `edit` run on each shard's
    h5py File f (first: whether it is shard 0), and its records removed unless `keep_records`."""
    folder = os.path.join(WORK, name)
    shutil.copytree(os.path.join(WORK, "one"), folder, ignore=shutil.ignore_patterns("*.xxh3"))
    script = ("import h5py, sys\n"
              "for i, path in enumerate(sorted(sys.argv[1:])):\n"
              "    with h5py.File(path, 'r+') as f:\n"
              "        first = i == 0\n"
              + "".join(f"        {line}\n" for line in edit.splitlines())
              + ("" if keep_records else "        [f.attrs.__delitem__(k) for k in list(f.attrs)]\n"))
    subprocess.run([H5PY_PYTHON, "-c", script, *(os.path.join(folder, n) for n in os.listdir(folder))], check=True)
    return folder


# (input_ids[0, 1]: the first example's first token after [CLS], inside its mask; 319 is below the
# config's vocab_size 320 and past the bundled vocabulary's 317 tokens)
past_vocab = "if first:\n    a = f['input_ids'][:]; a[0, 1] = 319; f['input_ids'][...] = a"
refused_before_training("past-record", edited("past-record", past_vocab),
                        r"shard-00000.hdf5: dataset 'input_ids', example 0: token 319 is past the largest the shard "
                        r"records \(bertc_max_token_id 316\): the shard is damaged.*put back a good copy of it "
                        r"\(with its .xxh3\), or make the set again")
refused_before_training("past-vocabulary", edited("past-vocabulary", past_vocab, keep_records=False),
                        r"shard-00000.hdf5: dataset 'input_ids', example 0: token 319 is past the run's vocabulary "
                        r".*vocab.txt \(317 tokens, xxh3 [0-9a-f]+\) \(ids 0 to 316\), though below \[model\] vocab_size 320")
repeat = ("if first:\n    p = f['masked_lm_positions'][:]; r = next(r for r in range(len(p)) if p[r, 1] != 0)\n"
          "    p[r, 1] = p[r, 0]; f['masked_lm_positions'][...] = p")
# (read whole before the first step, or checked as NVIDIA's are; one of a set is put back or the set
# made again, as moving it out leaves the set incomplete, while NVIDIA's may be moved out)
for records, fix in ((True, r"put back a good copy of it"), (False, r"move it out of the folder")):
    name = "repeated" if records else "repeated-nvidia"
    refused_before_training(name, edited(name, repeat, keep_records=records),
                            r"shard-00000.hdf5: dataset 'masked_lm_positions', example [0-9]+: position [0-9]+ is "
                            r"there twice, and BERT's create_pretraining_data and bertc prepare-data never repeat "
                            r"one.*" + fix)
# A record edited: one shard of a set counting another size than the others (its set was taken
# whole by the count of whichever was read last), an unsigned value past int64_t (said as the
# 9223372036854775807 libhdf5 clamps it to).
refused_before_training("count-disagrees", edited("count-disagrees", "if first:\n    f.attrs['bertc_shard_count'] = 5"),
                        r"shard-0000[0-3].hdf5 and .*shard-0000[0-3].hdf5: shards of one set that bertc prepare-data "
                        r"made together, and their records disagree on its size \([45] and [45] shards\)")
refused_before_training("uint64-record", edited("uint64-record", "if first:\n    import numpy\n"
                                                "    f.attrs['bertc_max_token_id'] = numpy.uint64(2**64 - 1)"),
                        r"attribute 'bertc_max_token_id' holds 18446744073709551615, past what bertc reads it as")
train("edited-control-run", "--steps", "1", "--data", edited("edited-control", "pass"))  # (the copy itself trains)
odd = os.path.join(WORK, "odd")
shutil.copytree(os.path.join(WORK, "one"), odd)
os.remove(os.path.join(odd, "shard-00003.hdf5.xxh3"))
os.makedirs(os.path.join(odd, "shard-00003.hdf5.xxh3"))
refused_before_training("checksum-folder", odd, r"shard-00003.hdf5.xxh3: named as a shard's checksum but not a file")
shutil.rmtree(os.path.join(odd, "shard-00003.hdf5.xxh3"))
os.makedirs(os.path.join(odd, "more"))
os.rename(os.path.join(odd, "shard-00003.hdf5"), os.path.join(odd, "more", "shard-00003.hdf5"))
refused_before_training("inner-folder", odd, r"more: a folder of shards inside .*odd: only the folder given is read.*"
                        r"holds shards of its own \(shard-[0-9]+.hdf5\): move the inner ones up beside them under names "
                        r"not taken there")
# Shards in a folder inside a folder of text: moving them up would mix shards and text (refused),
# so the advice is to give the shard folder itself, and that trains.
text_and_shards = os.path.join(WORK, "text-and-shards")
shutil.copytree(os.path.join(WORK, "one"), os.path.join(text_and_shards, "shards"))
shutil.copy(CORPUS, os.path.join(text_and_shards, "corpus.txt"))
refused_before_training("shards-in-text", text_and_shards, r"shards: a folder of shards inside .*text-and-shards: .* "
                        r"holds text \(corpus.txt\), and a run reads shards or text, not both: give the shard folder "
                        r"itself \(--data .*text-and-shards/shards\)")
train("shards-in-text-fixed", "--steps", "1", "--data", os.path.join(text_and_shards, "shards"))
os.rename(os.path.join(odd, "more", "shard-00003.hdf5"), os.path.join(odd, "shard-00003.HDF5"))
os.rmdir(os.path.join(odd, "more"))
shutil.copy(CORPUS, os.path.join(odd, "extra.txt"))
refused_before_training("text-beside", odd, r"odd: holds shards and text \(extra.txt\)")
os.remove(os.path.join(odd, "extra.txt"))
upper = re.sub(r'^data = .*$', f'data = "{odd}"', open(SHARDED).read(), flags=re.M)
open(os.path.join(WORK, "upper.toml"), "w").write(upper)
# Entries that are not shards (another extension, hidden) are said, not left out silently.
shutil.copy(os.path.join(WORK, "one", "shard-00000.hdf5"), os.path.join(odd, "extra.hdf"))
open(os.path.join(odd, "README.md"), "w").write("notes\n")
shutil.copy(os.path.join(WORK, "one", "shard-00000.hdf5"), os.path.join(odd, ".hidden.hdf5"))
p = train("upper-run", "--steps", "1", config=os.path.join(WORK, "upper.toml"))
if f"data: 4 shard(s) in {odd}, {examples} examples" not in p.stderr:
    fail(f"a shard named .HDF5 was not read with the others ({examples} examples expected):\n{p.stderr[-1500:]}")
if f"data: 3 entries of {odd} left out (.hidden.hdf5 (hidden), README.md, extra.hdf): a " \
        "shard is read when its name ends in .hdf5 or .h5 and does not start with '.'" not in p.stderr:
    fail(f"files beside the shards were left out without a word:\n{p.stderr[-1500:]}")
# Shards damaged while a run trains (a disk going bad, a copy over them): the error says which
# checkpoints are kept and both ways on; the second (a fresh run from the weights, with the bad
# data left out) is applied and works. 40 small shards, so that one is read a few dozen steps in
# (two are read when the run starts: the first, and the next ahead).
small = os.path.join(WORK, "small")
prepare("small", "--shards", "40")
midrun = re.sub(r'^data = .*$', f'data = "{small}"', open(SHARDED).read(), flags=re.M)
midrun = re.sub(r'^checkpoint_every = .*$', 'checkpoint_every = 1', midrun, flags=re.M)
midrun = re.sub(r'^steps = .*$', 'steps = 400', midrun, flags=re.M)
open(os.path.join(WORK, "midrun.toml"), "w").write(midrun)
proc = subprocess.Popen([BERTC, "train", os.path.join(WORK, "midrun.toml"), "--device", "cpu", "--checkpoint-dir",
                         os.path.join(WORK, "midrun")], env=ENV, stderr=subprocess.PIPE, text=True)
seen = ""
while not re.search(r"^step 3/", seen, flags=re.M):
    line = proc.stderr.readline()
    if not line:
        fail(f"the run ended (exit {proc.wait()}) before step 3:\n{seen[-1500:]}")
    seen += line
for name in os.listdir(small):
    if name.endswith(".hdf5"):
        with open(os.path.join(small, name), "r+b") as f:
            f.seek(os.path.getsize(os.path.join(small, name)) // 2)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0xFF]))
err = proc.communicate(timeout=600)[1]
m = re.search(r"the checkpoints are kept \(newest: step (\d+)\)\. A resumed run must read the same data: restore it "
              r"\(the same examples\) and run the same command with --resume; or leave that data out and start a "
              r"fresh run from the weights trained so far \(--init (\S+) --checkpoint-dir NEW_DIR\)", err)
if proc.returncode != 1 or "does not match its checksum" not in err or not m:
    fail(f"shards damaged mid-run: exit {proc.returncode} (expected 1), no checksum error or no advice:\n{err[-1500:]}")
p = train("midrun-fresh", "--init", m.group(2), "--steps", "2")
if "step 2/2" not in p.stderr:
    fail(f"the advised fresh run from {m.group(2)} did not train:\n{p.stderr[-1500:]}")
print(f"shards damaged mid-run: refused at a later step, checkpoint of step {m.group(1)} kept; --init from it trains")
# What a prepare-data ended at once leaves (scratch, lock), given to train: said as that, with the
# way on, which works (prepare-data into it again). And a prepare-data told to write into its own
# input folder is refused (shards among the text: a folder no run reads).
left = os.path.join(WORK, "left")
os.makedirs(os.path.join(left, ".prepare-scratch"))
open(os.path.join(left, ".prepare-lock"), "w").close()
p = train("left-run", "--steps", "1", "--data", left, check=False)
if p.returncode != 1 or "holds what a stopped bertc prepare-data left (.prepare-scratch, .prepare-lock) and no " \
        "shards: run that prepare-data again into it" not in p.stderr:
    fail(f"training on an interrupted prepare-data's folder: exit {p.returncode}, not said as that:\n{p.stderr[-1500:]}")
prepare("left", "--shards", "2")
texts = os.path.join(WORK, "texts")
os.makedirs(texts)
shutil.copy(CORPUS, os.path.join(texts, "c.txt"))
p = prepare("texts", "--input", texts, "--shards", "2", check=False)
if p.returncode != 1 or "is the --input folder, and shards written among the text" not in p.stderr or \
        sorted(os.listdir(texts)) != ["c.txt"]:
    fail(f"prepare-data into its own input folder: exit {p.returncode}:\n{p.stderr[-1500:]}")
print("PASS")
