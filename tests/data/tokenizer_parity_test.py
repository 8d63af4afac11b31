#!/usr/bin/env python3
"""bertc's tokenizer against Hugging Face tokenizers' BertWordPieceTokenizer: the same ids for
every line of a sample full of what tokenizers get wrong (accents, CJK, punctuation, control and
format characters, odd whitespace, words longer than WordPiece takes), lower-cased and cased.
Uses the `tokenizers` wheel scripts/setup.sh puts in .deps/python, else a Python that has it
($BERTC_TORCH_PYTHON, else python3); skipped (77) without.

usage: tokenizer_parity_test.py BERTC_BENCH_TOKENIZER SOURCE_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys

bench, source, work = sys.argv[1:4]
python = os.environ.get("BERTC_TORCH_PYTHON") or sys.executable
wheels = os.path.join(source, ".deps", "python")
if os.path.isdir(wheels):
    os.environ["PYTHONPATH"] = wheels + os.pathsep + os.environ.get("PYTHONPATH", "")
if subprocess.run([python, "-c", "import tokenizers"], capture_output=True).returncode != 0:
    print(f"SKIP: {python} has no tokenizers (pip install tokenizers; set BERTC_TORCH_PYTHON to that Python)")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

SAMPLE = [
    "The café's crème brûlée costs €5.50, naïve résumé!",
    "Ünïcödé àccents: Ελληνικά, русский, Ñandú, ŞİMDİ, İstanbul",
    "中文字符和日本語のテキスト、한국어 텍스트。",
    "mixed中文english混合text",
    "punctuation!!! ... ?!? (brackets) [square] {curly} <angle> «quotes» “smart” ‘single’ — – -",
    "control\tchars\x0bvertical\x0cform\u200bzero-width\u00a0nbsp\ufeffbom\u00adsoft\u0007bell",
    "numbers 3.14159 1,000,000 42nd 7th @user #hashtag $100 50% a&b a_b a/b",
    "supercalifragilisticexpialidocious" * 4 + " " + "x" * 120,
    "UPPER lower MiXeD CamelCase snake_case kebab-case",
    "emoji 🙂 🚀 and symbols ∑ ∫ √ ∞ ≤ ≥ ≠ ± × ÷",
    "combining e\u0301 a\u0308 n\u0303 vs precomposed é ä ñ",
    "   leading and trailing spaces   ",
    "",
    "tabs\t\tand\nnewlines inside",
]
# A vocabulary with what the sample needs to be more than [UNK]: the bundled words, the sample's
# characters (lower-cased and not, accents stripped and not) as words and as ##pieces, a few
# whole words.
words = [l.rstrip("\n") for l in open(os.path.join(source, "examples", "data", "vocab.txt"), encoding="utf-8")]
extra = set()
for line in SAMPLE:
    for ch in line + line.lower():
        if not ch.isspace():
            extra.update({ch, "##" + ch})
extra.update({"cafe", "caf", "##e", "creme", "brulee", "naive", "resume", "the", "costs", "super", "##cal", "##if",
              "##rag", "##il", "##istic", "unicode", "accents", "mixed", "english", "text", "numbers", "upper", "lower"})
vocab = os.path.join(work, "vocab.txt")
with open(vocab, "w", encoding="utf-8") as f:
    seen = set()
    for w in words + sorted(extra):
        if w not in seen:
            seen.add(w)
            f.write(w + "\n")
text = os.path.join(work, "sample.txt")
with open(text, "w", encoding="utf-8", newline="\n") as f:
    for line in SAMPLE:
        f.write(line.replace("\n", " ") + "\n")

failed = False
for cased in (False, True):
    ours_path = os.path.join(work, f"ours-{cased}.txt")
    subprocess.run([bench, text, vocab, "--threads", "1", "--ids", ours_path] + (["--cased"] if cased else []),
                   check=True, capture_output=True)
    code = (f"from tokenizers import BertWordPieceTokenizer\n"
            f"t = BertWordPieceTokenizer({vocab!r}, lowercase={not cased}, clean_text=True, handle_chinese_chars=True)\n"
            f"for l in open({text!r}, encoding='utf-8').read().split('\\n')[:-1]:\n"
            f"    print(' '.join(map(str, t.encode(l, add_special_tokens=False).ids)))\n")
    theirs = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
    ours = open(ours_path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(SAMPLE):
        if ours[i] != theirs[i]:
            failed = True
            print(f"FAIL ({'cased' if cased else 'uncased'}) line {i + 1} {line[:60]!r}:\n  bertc      {ours[i][:300]}\n"
                  f"  tokenizers {theirs[i][:300]}")
    unknown = sum(o.split().count("1") for o in ours)  # [UNK] is id 1 in the bundled vocabulary
    print(f"{'cased' if cased else 'uncased'}: {len(SAMPLE)} lines compared, {unknown} [UNK]")
if failed:
    sys.exit(1)
print("PASS")
