"""Runs every config under examples/ as its first comment says it is meant to be used, so that no
example rots unnoticed:
  - a config whose leading comment has a line "# compile-only: ARCH ..." is compiled (bertc compile
    --report) for every arch it names;
  - a [finetune] config fine-tunes one epoch on the CPU reference (its own data);
  - any other trains 2 steps on the CPU reference (its own data), with the model program of its
    folder when the folder defines one (examples/prenorm_bert -> the prenorm-bert program).
Prints one line per config and exits non-zero naming any that failed, or if it finds fewer configs
than MIN (a moved examples folder would otherwise test nothing).

Usage: run_examples.py BERTC EXAMPLES_SRC EXAMPLES_BIN WORK_DIR MIN
"""
import glob
import os
import re
import subprocess
import sys
import tomllib

bertc, source, built, work, minimum = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
configs = sorted(glob.glob(os.path.join(source, "**", "*.toml"), recursive=True))
failed = []


def program_for(config):
    """The model program built from the config's folder, if the folder defines one, else bertc."""
    folder = os.path.dirname(config)
    for cpp in glob.glob(os.path.join(folder, "*.cpp")):
        if "BERTC_MODEL(" in open(cpp).read():
            return os.path.join(built, os.path.basename(folder).replace("_", "-"))
    return bertc


def leading_comment(config):
    lines = []
    for line in open(config):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


for config in configs:
    name = os.path.relpath(config, source)
    run_dir = os.path.join(work, name.replace(os.sep, "_"))
    program = program_for(config)
    with open(config, "rb") as f:
        text = tomllib.load(f)
    archs = re.search(r"^# compile-only: (.+)$", leading_comment(config), re.M)
    if archs:
        commands = [[program, "compile", config, "--report", "--arch", arch] for arch in archs.group(1).split()]
        what = f"compiled for {archs.group(1)}"
    elif "finetune" in text:
        commands = [[program, "finetune", config, "--device", "cpu", "--epochs", "1", "--checkpoint-dir", run_dir]]
        what = "fine-tuned 1 epoch"
    else:
        commands = [[program, "train", config, "--device", "cpu", "--steps", "2", "--checkpoint-dir", run_dir]]
        what = "trained 2 steps"
    for command in commands:
        r = subprocess.run(command, capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(name)
            print(f"EXAMPLE {name}: FAILED: {' '.join(command)}\n{r.stderr[-2000:]}")
            break
    else:
        print(f"EXAMPLE {name}: {what} ({os.path.basename(program)})")
if len(configs) < minimum:
    sys.exit(f"found {len(configs)} configs under {source}, expected {minimum} at least")
if failed:
    sys.exit(f"{len(failed)} example(s) failed: {', '.join(failed)}")
print(f"EXAMPLES: {len(configs)} configs, all ran")
