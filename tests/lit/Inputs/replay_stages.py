#!/usr/bin/env python3
"""Replays a --dump-ir folder: runs every `bertc-opt INPUT --passes='P'` line of stages.txt and
compares its output with the stage file the pipeline wrote, byte for byte.

usage: replay_stages.py BERTC_OPT DUMP_DIR
Prints "REPLAYED: N stages identical" (exit 0), or each stage that differs (exit 1).
"""
import re
import subprocess
import sys

bertc_opt, folder = sys.argv[1], sys.argv[2]
line_re = re.compile(r"^(\S+\.ir): bertc-opt (\S+\.ir) --passes='([^']*)'$")
replayed, failed = 0, []
with open(f"{folder}/stages.txt") as stages:
    for line in stages:
        m = line_re.match(line.rstrip("\n"))
        if not m:
            continue
        output, source, passes = m.groups()
        got = subprocess.run([bertc_opt, f"{folder}/{source}", f"--passes={passes}"], capture_output=True, text=True)
        with open(f"{folder}/{output}") as f:
            want = f.read()
        if got.returncode != 0:
            failed.append(f"{output}: bertc-opt failed: {got.stderr.strip()}")
        elif got.stdout != want:
            failed.append(f"{output}: bertc-opt {source} --passes='{passes}' prints other IR than the pipeline wrote")
        replayed += 1
if failed or replayed == 0:
    print("\n".join(failed) or "no bertc-opt stage in stages.txt")
    sys.exit(1)
print(f"REPLAYED: {replayed} stages identical")
