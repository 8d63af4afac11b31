#!/usr/bin/env python3
"""bertc vocab: a WordPiece vocabulary trained from the bundled corpus is well formed (BERT's
special tokens first, no duplicates, the size asked), deterministic, covers its text (no [UNK]),
splits words about as finely as one Hugging Face tokenizers trains from the same text and size
(where tokenizers is found: the .deps/python wheel, $BERTC_TORCH_PYTHON or python3), and trains.

usage: vocab_test.py BERTC BERTC_BENCH_TOKENIZER SOURCE_DIR WORK_DIR
"""
import os
import re
import shutil
import subprocess
import sys

BERTC, BENCH, SOURCE, WORK = sys.argv[1:5]
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
CONFIG = os.path.join(SOURCE, "tests", "lit", "Inputs", "test-tiny.toml")
CORPUS = os.path.join(SOURCE, "examples", "data", "corpus.txt")
SIZE = 320  # test-tiny's vocab_size: the vocabulary trains the model below


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def vocab(name, *flags, check=True):
    out = os.path.join(WORK, name)
    p = subprocess.run([BERTC, "vocab", CONFIG, "-o", out, *flags], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        fail(f"bertc vocab {' '.join(flags)} exited {p.returncode}:\n{p.stderr[-1500:]}")
    return p, out


p, path = vocab("a.txt", "--size", str(SIZE))
tokens = open(path, encoding="utf-8").read().split("\n")[:-1]
if tokens[:5] != ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]:
    fail(f"the special tokens do not come first: {tokens[:5]}")
if len(tokens) != SIZE or len(set(tokens)) != SIZE:
    fail(f"{len(tokens)} tokens ({len(set(tokens))} distinct), {SIZE} asked")
print(next(l for l in p.stderr.splitlines() if l.startswith("vocab: ") and "tokens (" in l)[:200])
# (no --size: the config's [model] vocab_size, SIZE, which a vocabulary must fit to be trained with)
_, again = vocab("b.txt", "--threads", "1")
if open(again, "rb").read() != open(path, "rb").read():
    fail("two runs (2 threads and 1; --size 320 and the config's vocab_size) trained different vocabularies")
refused, _ = vocab("a.txt", "--size", str(SIZE), check=False)
if refused.returncode == 0 or "exists: write the vocabulary to a new file" not in refused.stderr:
    fail("an existing vocabulary file was not refused:\n" + refused.stderr[-500:])


def tokens_of(vocab_path):
    ids = os.path.join(WORK, "ids.txt")
    subprocess.run([BENCH, CORPUS, vocab_path, "--threads", "1", "--ids", ids], check=True, capture_output=True)
    return [int(t) for line in open(ids) for t in line.split()]


ours = tokens_of(path)
if 1 in ours:
    fail(f"the trained vocabulary leaves {ours.count(1)} [UNK] in its own text")
words = sum(len(re.findall(r"\w+|[^\w\s]", line)) for line in open(CORPUS, encoding="utf-8"))
print(f"bertc's vocabulary: {len(ours)} tokens for {words} words ({len(ours) / words:.3f} a word)")

python = os.environ.get("BERTC_TORCH_PYTHON") or sys.executable
wheels = os.path.join(SOURCE, ".deps", "python")
env = dict(os.environ, PYTHONPATH=wheels + os.pathsep + os.environ.get("PYTHONPATH", ""))
if subprocess.run([python, "-c", "import tokenizers"], env=env, capture_output=True).returncode == 0:
    hf_dir = os.path.join(WORK, "hf")
    os.makedirs(hf_dir)
    code = (f"from tokenizers import BertWordPieceTokenizer\n"
            f"t = BertWordPieceTokenizer(lowercase=True)\n"
            f"t.train([{CORPUS!r}], vocab_size={SIZE}, min_frequency=2, limit_alphabet=1000, show_progress=False)\n"
            f"t.save_model({hf_dir!r})\n")
    subprocess.run([python, "-c", code], env=env, check=True, capture_output=True)
    theirs = tokens_of(os.path.join(hf_dir, "vocab.txt"))
    ratio = len(ours) / len(theirs)
    print(f"tokenizers' vocabulary of the same size: {len(theirs)} tokens ({len(theirs) / words:.3f} a word); "
          f"bertc's / theirs = {ratio:.3f}")
    # Both merge the most frequent pair first: the splits should agree to a few percent (ties and
    # tokenizers' own ordering of its alphabet differ). 5% is well past what was seen.
    if abs(ratio - 1) > 0.05:
        fail(f"bertc's vocabulary splits the corpus into {ratio:.3f}x the tokens of tokenizers' (5% allowed)")
else:
    print("(no tokenizers: the comparison with its trainer is skipped)")

# The model trains with it (3 steps).
t = subprocess.run([BERTC, "train", CONFIG, "--device", "cpu", "--vocab", path, "--steps", "3", "--checkpoint-dir",
                    os.path.join(WORK, "run")], capture_output=True, text=True, timeout=300)
if t.returncode != 0 or "step 3/3" not in t.stderr:
    fail(f"training with the trained vocabulary failed (exit {t.returncode}):\n{t.stderr[-1500:]}")
print("PASS")
