"""Trains one step and exports it from a working directory deeper than a path may be (4095
bytes): the vocabulary's recorded absolute path cannot be opened. Prints export's error, then
exports with --vocab by a relative path (the advice) and prints its exit status.
usage: deep_folder_export.py BERTC CONFIG DATA_FOLDER WORK"""
import os
import shutil
import subprocess
import sys

bertc, config, data, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
for _ in range(18):  # (18 x 251 bytes: past 4095)
    os.mkdir("d" * 250)
    os.chdir("d" * 250)
shutil.copytree(data, "data")
text = open(config).read().replace('"../../../examples/data/', '"data/')
open("t.toml", "w").write(text)
subprocess.run([bertc, "train", "t.toml", "--device", "cpu", "--steps", "1", "--checkpoint-dir", "ck"],
               capture_output=True, check=True)
r = subprocess.run([bertc, "export", "ck/checkpoint-000001.safetensors", "-o", "hf"], capture_output=True, text=True)
print(f"export: exit {r.returncode}: {r.stderr.strip()}")
r = subprocess.run([bertc, "export", "ck/checkpoint-000001.safetensors", "-o", "hf", "--vocab", "data/vocab.txt"],
                   capture_output=True, text=True)
print(f"export --vocab data/vocab.txt: exit {r.returncode}")
os.chdir("/")
shutil.rmtree(work)
