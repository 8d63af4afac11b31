"""Damages every shard of a folder while a training run reads it (zeroed in place, after the run
checked them all before step 1): the run stops at the next shard it loads. Prints the run's error
line, its exit status and newest checkpoint, then puts the shards back and resumes one step further.
usage: damage_shards_during_run.py BERTC CONFIG SHARDS RUN_FOLDER"""
import os
import shutil
import subprocess
import sys
import time

bertc, config, shards, run = sys.argv[1:5]
shutil.rmtree(run, ignore_errors=True)
good = shards + ".good"
shutil.rmtree(good, ignore_errors=True)
shutil.copytree(shards, good)
metrics = os.path.join(run, "metrics.jsonl")
p = subprocess.Popen([bertc, "train", config, "--device", "cpu", "--data", shards, "--steps", "100000",
                      "--checkpoint-dir", run], stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while not (os.path.exists(metrics) and sum(1 for _ in open(metrics)) >= 3):
    if time.time() > deadline or p.poll() is not None:
        p.kill()
        sys.exit(f"no third metrics line appeared (exit {p.poll()})")
    time.sleep(0.02)
for name in os.listdir(shards):
    if name.endswith(".hdf5"):
        path = os.path.join(shards, name)
        with open(path, "r+b") as f:
            f.write(bytes(os.path.getsize(path)))
err = p.communicate(timeout=300)[1]
print([line for line in err.splitlines() if "error" in line][-1:])
kept = sorted(f for f in os.listdir(run) if f.startswith("checkpoint-"))
print(f"exit {p.returncode}; stopped with {kept[-1] if kept else 'nothing'}")
if not kept:
    sys.exit(0)
step = int(kept[-1].split("-")[1].split(".")[0])
shutil.rmtree(shards)
shutil.copytree(good, shards)
r = subprocess.run([bertc, "train", config, "--device", "cpu", "--data", shards, "--steps", str(step + 1), "--resume",
                    "--checkpoint-dir", run], capture_output=True, text=True, timeout=120)
print(f"resumed after the shards were put back: exit {r.returncode}, "
      f"{'checkpoint of step ' + str(step + 1) if os.path.exists(os.path.join(run, f'checkpoint-{step + 1:06d}.safetensors')) else 'no checkpoint'}")
