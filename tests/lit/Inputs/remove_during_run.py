"""Removes a training run's metrics file while it runs; prints the run's last error line, its exit
status and newest checkpoint, then resumes it one step further and checks that the metrics file
holds the stopped step's line (carried by its checkpoint) and the next.
usage: remove_during_run.py BERTC CONFIG RUN_FOLDER"""
import json
import os
import shutil
import subprocess
import sys
import time

bertc, config, run = sys.argv[1:4]
shutil.rmtree(run, ignore_errors=True)
metrics = os.path.join(run, "metrics.jsonl")
p = subprocess.Popen([bertc, "train", config, "--device", "cpu", "--steps", "100000", "--checkpoint-dir", run],
                     stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while not (os.path.exists(metrics) and os.path.getsize(metrics) > 0):
    if time.time() > deadline or p.poll() is not None:
        p.kill()
        sys.exit(f"no metrics line appeared (exit {p.poll()})")
    time.sleep(0.02)
os.remove(metrics)
err = p.communicate(timeout=120)[1]
print([line for line in err.splitlines() if "error" in line][-1:])
kept = sorted(f for f in os.listdir(run) if f.startswith("checkpoint-"))
print(f"exit {p.returncode}; stopped with {kept[-1] if kept else 'nothing'}")
step = int(kept[-1].split("-")[1].split(".")[0])
r = subprocess.run([bertc, "train", config, "--device", "cpu", "--steps", str(step + 1), "--resume", "--checkpoint-dir",
                    run], capture_output=True, text=True, timeout=120)
steps = [json.loads(line)["step"] for line in open(metrics)]
print("resumed: the stopped step's line is back, then the next: " + ("OK" if steps == [step, step + 1] else f"{steps}"))
