"""Runs the commands of the README and of the guides it links (docs/*.md, in the order of its
links), so that the documentation cannot drift from the program.

Every command of a ```sh block runs, in that order, in one scratch folder where build/ and
examples/ lead to the real ones, except:
  - synopsis lines (they show options in brackets, "[--steps N]"), and
  - lines whose comment says "(not run: why)" (a GPU, several machines, a download).
Where the README shows output (a plain block whose first line is "$ COMMAND"), the command runs
as shown and every line shown must appear in its output, in order (spaces at the ends and
durations such as "0.07 s" aside; a line "..." stands for lines left out; output that shows an
error may come with a non-zero exit). build/, examples/ and tests/ of the checkout are at hand.
To stay fast on a CPU the commands are made small, never changed in kind:
  - examples/bert-base.toml and bert-large.toml become bert-tiny.toml (not for shown output);
  - bertc train gets --steps 2, bertc finetune --epochs 1 over the first 256 training and 64 dev
    examples of its config's task files (given as --train-data and --dev-data), bertc vocab
    --size 400;
  - a checkpoint path that does not exist (checkpoint-000600 of a 600-step run shortened to 2)
    becomes the newest checkpoint of its folder.
Prints each command with its time and result; exits non-zero naming the first failure.

A guide in docs/ with commands that the README does not link fails the run: its commands would
go unchecked.

Usage: run_readme.py README BUILD_DIR SOURCE_DIR WORK_DIR
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

readme, build, source, work = sys.argv[1:5]


def guides_linked(readme_text, folder):
    """The docs/*.md guides the README links, in the order of their first link."""
    out = []
    for target in re.findall(r"\]\((docs/[\w./-]+\.md)\)", readme_text):
        if target not in out and os.path.exists(os.path.join(folder, target)):
            out.append(target)
    return out


readme_text = open(readme).read()
folder = os.path.dirname(os.path.abspath(readme))
documents = [(os.path.basename(readme), readme_text)] + [
    (g, open(os.path.join(folder, g)).read()) for g in guides_linked(readme_text, folder)]
unlinked = [os.path.relpath(p, folder) for p in sorted(glob.glob(os.path.join(folder, "docs", "*.md")))
            if "```sh" in open(p).read() and os.path.relpath(p, folder) not in dict(documents)]
if unlinked:
    sys.exit(f"{', '.join(unlinked)}: commands in a guide the README does not link: link it from the README's "
             f"guides, where its commands run in order")
shutil.rmtree(work, ignore_errors=True)  # (the test's own scratch folder: every run starts empty)
os.makedirs(work)
# The kernels the commands compile are cached in the scratch folder, not in the user's cache; or
# where BERTC_TEST_XDG_CACHE names one, there (ctest: the cache lit's and the emulated driver's
# tests share, so that a kernel one compiled is not compiled again; entries are keyed by source
# and options and checksummed, and written atomically, so sharing changes no result).
os.environ["XDG_CACHE_HOME"] = os.environ.get("BERTC_TEST_XDG_CACHE") or os.path.join(os.path.abspath(work), "cache")
for name, target in (("build", build), ("examples", os.path.join(source, "examples")), ("tests", os.path.join(source, "tests"))):
    link = os.path.join(work, name)
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(target), link)


def commands_of(body):
    """(command, comment) per logical line: continuations joined, comment lines dropped."""
    out, pending = [], ""
    for line in body.split("\n"):
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        code, comment = (re.split(r"\s+#(?=\s|$)", line, maxsplit=1) + [""])[:2]  # (a comment: " # ...")
        out.append((code.strip(), comment.strip()))
    return out


def newest_checkpoint(path):
    if os.path.exists(os.path.join(work, path)) or not re.search(r"checkpoint-\d{6}\.safetensors$", path):
        return path
    found = sorted(glob.glob(os.path.join(work, os.path.dirname(path), "checkpoint-*.safetensors")))
    return os.path.relpath(found[-1], work) if found else path


def task_slice(config):
    """--train-data and --dev-data flags naming the first 256 and 64 examples of a fine-tuning
    config's task files (a header line kept where one is: one example more where there is none)."""
    import tomllib
    path = os.path.join(work, config)
    try:
        section = tomllib.load(open(path, "rb")).get("finetune", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []  # (a config the command itself will refuse, as the guide shows)
    flags = []
    for key, flag, rows in (("train_data", "--train-data", 256), ("dev_data", "--dev-data", 64)):
        if key not in section:
            continue
        source_file = os.path.join(os.path.dirname(path), section[key])
        if not os.path.exists(source_file):
            return []
        target = os.path.join(work, "task-slices", os.path.basename(os.path.dirname(config)) + "-" + key +
                              os.path.splitext(source_file)[1])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(source_file) as src, open(target, "w") as out:
            for i, line in enumerate(src):
                if i > rows:
                    break
                out.write(line)
        flags += [flag, os.path.relpath(target, work)]
    return flags


def made_small(args):
    args = [a.replace("examples/bert-base.toml", "examples/bert-tiny.toml").replace("examples/bert-large.toml",
                                                                                    "examples/bert-tiny.toml")
            for a in args]
    args = [newest_checkpoint(a) for a in args]
    if "train" in args and "--steps" not in args:
        args += ["--steps", "2"]
    if "finetune" in args and "--epochs" not in args:
        args += ["--epochs", "1"]
    if "finetune" in args and "--train-data" not in args and "--dev-data" not in args:
        config = next((a for a in args if a.endswith(".toml")), None)
        args += task_slice(config) if config else []
    if "vocab" in args and "--size" in args:
        args[args.index("--size") + 1] = "400"
    return args


def comparable(line):
    """A line as compared: spaces at the end dropped, durations ("0.07 s") not compared."""
    return re.sub(r"\b\d+(\.\d+)? s\b", "N s", line.rstrip())


def run(document, args, shown=None):
    began = time.time()
    r = subprocess.run(args, cwd=work, capture_output=True, text=True)
    seconds = time.time() - began
    output = r.stdout + r.stderr
    problem = None
    if r.returncode != 0 and not (shown and "error:" in shown[0]):  # (a shown error may exit non-zero)
        problem = f"exit {r.returncode}:\n{output[-3000:]}"
    elif shown:
        lines = [comparable(l) for l in output.split("\n")]
        at = 0
        for want in shown:
            if want.strip() == "...":  # (the README leaves lines out)
                continue
            while at < len(lines) and lines[at] != comparable(want):
                at += 1
            if at == len(lines):
                problem = f"{document} shows\n  {want}\nwhich the output lacks (in order):\n{output[-3000:]}"
                break
            at += 1
    print(f"{'ok  ' if not problem else 'FAIL'} {seconds:5.1f} s  {' '.join(args)}", flush=True)
    if problem:
        sys.exit(f"{document}: command failed: {' '.join(args)}\n{problem}")


ran = skipped = 0
for document, text in documents:
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang == "sh":
            for code, comment in commands_of(body):
                if "[--" in code or "(not run" in comment:
                    skipped += 1
                    continue
                if code.startswith("scripts/"):
                    sys.exit(f"{document}: {code}: scripts/ lines must say (not run: ...) (they build and test everything)")
                run(document, made_small(shlex.split(code)))
                ran += 1
        elif lang == "" and body.startswith("$ "):
            first, *shown = body.rstrip("\n").split("\n")
            run(document, shlex.split(first[2:]), shown)
            ran += 1
print(f"{len(documents)} documents ({', '.join(d for d, _ in documents)}): {ran} commands ran, {skipped} not run "
      f"(synopses and marked)")
