#!/usr/bin/env python3
"""bertc's WordPiece tokenizer beside Hugging Face tokenizers' BertWordPieceTokenizer (Rust) on
the same text and vocabulary: tokens/s on one thread and on every core, and whether every line's
ids agree. Prints a Markdown table; never passes or fails on speed. Needs `tokenizers` (PyPI).

usage: tokenizer_compare.py BERTC_BENCH_TOKENIZER TEXT VOCAB [--cased]
"""
import json
import os
import subprocess
import sys
import time

bench, text, vocab = sys.argv[1:4]
cased = "--cased" in sys.argv
threads = os.cpu_count()


def hf(workers):
    """Hugging Face's time for every line (encode_batch, no special tokens), in a fresh process
    with its thread pool set; returns (seconds, tokens, ids)."""
    code = f"""
import json, sys, time
from tokenizers import BertWordPieceTokenizer
t = BertWordPieceTokenizer({vocab!r}, lowercase={not cased}, clean_text=True, handle_chinese_chars=True)
lines = open({text!r}, encoding="utf-8").read().split("\\n")
if lines and lines[-1] == "": lines.pop()
began = time.perf_counter()
out = t.encode_batch(lines, add_special_tokens=False)
seconds = time.perf_counter() - began
json.dump({{"seconds": seconds, "tokens": sum(len(e.ids) for e in out)}}, sys.stdout)
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        for e in out: f.write(" ".join(map(str, e.ids)) + "\\n")
"""
    env = dict(os.environ, RAYON_NUM_THREADS=str(workers), TOKENIZERS_PARALLELISM="true" if workers > 1 else "false")
    ids = os.path.join(os.path.dirname(os.path.abspath(text)), f".hf-ids-{workers}.txt")
    p = subprocess.run([sys.executable, "-c", code, ids], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout), ids


ours_ids = os.path.join(os.path.dirname(os.path.abspath(text)), ".bertc-ids.txt")
p = subprocess.run([bench, text, vocab, "--threads", str(threads), "--ids", ours_ids] + (["--cased"] if cased else []),
                   capture_output=True, text=True, check=True)
ours = json.loads(p.stdout.strip().splitlines()[-1])
hf1, hf_ids = hf(1)
hfn, _ = hf(threads)
a = open(ours_ids).read().split("\n")
b = open(hf_ids).read().split("\n")
differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
lines = ours["lines"]
print(f"text: {text}, {ours['bytes'] / 2**20:.1f} MiB, {lines} lines, {ours['tokens']} tokens (bertc), "
      f"{hf1['tokens']} (tokenizers); vocabulary {vocab}")
print()
print("| tokenizer | 1 thread, tokens/s | %d threads, tokens/s |" % threads)
print("| --- | ---: | ---: |")
print(f"| bertc | {ours['tokens'] / ours['seconds_1']:,.0f} | {ours['tokens'] / ours['seconds_n']:,.0f} |")
print(f"| tokenizers (BertWordPieceTokenizer) | {hf1['tokens'] / hf1['seconds']:,.0f} | {hfn['tokens'] / hfn['seconds']:,.0f} |")
print(f"| bertc / tokenizers | {(ours['tokens'] / ours['seconds_1']) / (hf1['tokens'] / hf1['seconds']):.2f}x | "
      f"{(ours['tokens'] / ours['seconds_n']) / (hfn['tokens'] / hfn['seconds']):.2f}x |")
print()
print(f"ids: {lines - len(differ)} of {lines} lines the same" + (f"; first differing line {differ[0] + 1}:\n  bertc      {a[differ[0]][:200]}\n  tokenizers {b[differ[0]][:200]}" if differ else ""))
for f in (ours_ids, hf_ids, hf_ids.replace("-1.txt", f"-{threads}.txt")):
    if os.path.exists(f):
        os.remove(f)
