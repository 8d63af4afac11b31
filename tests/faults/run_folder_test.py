#!/usr/bin/env python3
"""What a user or a crash can do to a run folder, one thing at a time, and what must hold after
each: two runs started at once into one folder (one trains, the other is refused naming it);
SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 (the step finishes, a checkpoint is written, exit
128 + the signal, and --resume continues exactly as if never stopped); a signal while the text
is read (stopped at the line reached, nothing saved); SIGHUP under nohup (ignored); one while a checkpoint is written (that
checkpoint is the stop's); one during export (nothing left); a second signal (ends at once, its temporary swept by the
next run; the host compiler's process group ends with it); a SIGKILL (the stale lock taken over); a flipped byte or an edited step in a checkpoint
(refused naming the tensor or the metadata, the older checkpoint untouched and then resumed from);
metrics lines edited or cut short (dropped on resume by their checksums, the rest unchanged); a
resume with other settings (refused naming the key, the folder untouched); a signal or a kill at
a random moment (seeded by BERTC_FAULT_SEED: what is left is whole and resumes exactly).

usage: run_folder_test.py BERTC SOURCE_DIR WORK_DIR
"""
import hashlib
import json
import math
import os
import re
import resource
import shutil
import signal
import struct
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
text = open(os.path.join(SOURCE, "tests", "lit", "Inputs", "test-tiny.toml")).read()
text = re.sub(r'^(data|vocab) = "\.\./\.\./\.\./([^"]+)"', lambda m: f'{m.group(1)} = "{SOURCE}/{m.group(2)}"', text,
              flags=re.M)
text = re.sub(r"^steps = .*$", "steps = 40", text, flags=re.M)
text = re.sub(r"^checkpoint_every = .*$", "checkpoint_every = 0", text, flags=re.M)
CONFIG = os.path.join(WORK, "tiny.toml")
open(CONFIG, "w").write(text)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def folder(name):
    return os.path.join(WORK, name)


def start(name, *flags):
    return subprocess.Popen([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder(name), *flags],
                            stderr=subprocess.PIPE, text=True)


def run(name, *flags):
    return subprocess.run([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder(name), *flags],
                          capture_output=True, text=True, timeout=600)


def wait_for_step(p, step):
    """Reads the run's log until it reports `step`; returns what it read."""
    seen = ""
    while True:
        line = p.stderr.readline()
        if not line:
            fail(f"the run ended (exit {p.wait()}) before step {step}:\n{seen[-1500:]}")
        seen += line
        if re.match(rf"step {step}/", line):
            return seen


def read_until(p, pattern, otherwise):
    """Reads the run's log until a line matches `pattern` (a regex); fails with `otherwise` if it ends first."""
    seen = ""
    while not re.search(pattern, seen, flags=re.M):
        line = p.stderr.readline()
        if not line:
            fail(f"{otherwise} (exit {p.wait()}):\n{seen[-1500:]}")
        seen += line
    return seen


def wait_for_file(p, where, prefix, otherwise):
    """Waits (60 s at most, while `p` runs) for a file named prefix* in `where`: a write under way."""
    deadline = time.time() + 60
    while not any(f.startswith(prefix) for f in os.listdir(where)):
        if time.time() > deadline or p.poll() is not None:
            p.kill()
            fail(f"{otherwise} (exit {p.poll()})")
        time.sleep(0.02)


def losses(name):
    return [(m["step"], m["loss"], m["grad_norm"]) for m in map(json.loads, open(os.path.join(folder(name), "metrics.jsonl")))]


def digests(name):
    d = folder(name)
    return {f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for f in sorted(os.listdir(d)) if f.startswith("checkpoint-")}


# The run every interrupted one must match.
straight = run("straight")
if straight.returncode != 0:
    fail(f"the uninterrupted run failed:\n{straight.stderr[-1500:]}")

# 1. Two runs started at the same moment into one folder: one trains, the other is refused.
for attempt in range(3):
    name = f"twice-{attempt}"
    a, b = start(name), start(name)
    outs = [(p.wait(timeout=600), p.stderr.read()) for p in (a, b)]
    codes = sorted(code for code, _ in outs)
    refused = [err for code, err in outs if code != 0]
    if codes[0] != 0 or len(refused) != 1 or "is in use by another bertc train (" not in refused[0]:
        fail(f"two runs into one folder: exits {codes}, expected one 0 and one refusal naming the holder:\n"
             + "\n---\n".join(err[-800:] for _, err in outs))
    if losses(name) != losses("straight"):
        fail("the run that trained beside a refused one wrote other metrics than an undisturbed run")
print("two runs at once: one refused:", refused[0].strip().splitlines()[-1][:160])

# 2. Every signal users and schedulers send before a kill (SIGTERM, SIGINT; SIGHUP from a closed
# terminal; SIGUSR1/SIGUSR2 from Slurm's --signal) mid-run: the step ends, a checkpoint is
# written, the exit says which, and --resume trains on exactly as the uninterrupted run.
for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129), (signal.SIGUSR1, 138),
                  (signal.SIGUSR2, 140)):
    name = f"stopped-{sig.name}"
    p = start(name)
    wait_for_step(p, 5)
    p.send_signal(sig)
    rest = p.stderr.read()
    if p.wait() != code:
        fail(f"{sig.name}: exit {p.returncode}, expected {code}:\n{rest[-1500:]}")
    m = re.search(rf"stopped by {sig.name} after step (\d+): continue with the same command and --resume", rest)
    if not m or not os.path.exists(os.path.join(folder(name), f"checkpoint-{int(m.group(1)):06d}.safetensors")):
        fail(f"{sig.name}: no stop message or no checkpoint of the step it stopped after:\n{rest[-1500:]}")
    stopped_at = int(m.group(1))
    if stopped_at >= 40:
        fail(f"{sig.name} stopped after step {stopped_at}: too late to test a stop")
    resumed = run(name, "--resume")
    if resumed.returncode != 0 or f"(step {stopped_at})" not in resumed.stderr:
        fail(f"{sig.name}: --resume after the stop failed:\n{resumed.stderr[-1500:]}")
    if losses(name) != losses("straight"):
        fail(f"{sig.name}: stopped at step {stopped_at} and resumed, the run differs from the uninterrupted one")
    print(f"{sig.name}: stopped after step {stopped_at}, exit {code}; resumed run equals the uninterrupted one")

# A signal while the training text is read (minutes on a large corpus, past a scheduler's grace
# time): the reading stops at the line it reached, nothing is saved, exit 128 + the signal.
big = os.path.join(WORK, "big.txt")
with open(big, "w") as out:
    corpus = open(os.path.join(SOURCE, "examples", "data", "corpus.txt")).read()
    for _ in range(30):
        out.write(corpus + "\n")
p = start("signalled-reading", "--data", big)
# (the signal comes while it reads: the vocabulary's line is said just before the text is read, which
# takes a second or more here; waiting for the reading's progress line, said after 2 s, failed on a
# machine that read the text in less)
read_until(p, "^vocab: ", "the run ended before reading its text")
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
if p.wait() != 143 or not re.search(rf"stopped by SIGTERM while tokenizing {re.escape(big)} \(line \d+\), before the "
                                     "first step: nothing to save", rest):
    fail(f"SIGTERM while the text is read: exit {p.returncode} (expected 143, stopped while tokenizing):\n{rest[-1500:]}")
print("SIGTERM while reading the text:", rest.strip().splitlines()[-1][:200])

# The other long commands on a signal: bertc vocab stops after counting and writes nothing; bertc
# compile (NVRTC cannot stop midway) ends at once, leaving no output and no cache entry half-made.
import random as words_random
words = os.path.join(WORK, "words.txt")
draw = words_random.Random(1)
vocabulary = ["".join(draw.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(draw.randint(3, 12))) for _ in range(100000)]
with open(words, "w") as out:
    for i in range(20000):
        out.write(" ".join(draw.choice(vocabulary) for _ in range(12)) + "\n" + ("\n" if i % 10 == 9 else ""))
vocab_out = os.path.join(WORK, "signalled-vocab.txt")
p = subprocess.Popen([BERTC, "vocab", CONFIG, "--input", words, "-o", vocab_out, "--size", "30000"],
                     stderr=subprocess.PIPE, text=True)
read_until(p, r"counting words 100\.0%", "bertc vocab ended before counting its words")  # (then it merges)
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
# (the signal comes as the counting ends: the stop is in the merges' preparation or the merging)
if p.wait() != 143 or not re.search(r"vocab: stopped by SIGTERM while (preparing the merges|merging \(\d+ of up to "
                                    rf"30000 tokens made\)): {re.escape(vocab_out)} not written", rest) or \
        os.path.exists(vocab_out):
    fail(f"SIGTERM while bertc vocab merges: exit {p.returncode} (expected 143, stopped while merging, no file):\n"
         f"{rest[-1500:]}")
print("SIGTERM during bertc vocab:", rest.strip().splitlines()[-1][:200])
cache = os.path.join(WORK, "signalled-compile-cache")
program = os.path.join(WORK, "signalled.bertx")
p = subprocess.Popen([BERTC, "compile", os.path.join(SOURCE, "examples", "bert-base.toml"), "--arch", "sm_80",
                      "-o", program], stderr=subprocess.PIPE, text=True, env=dict(os.environ, XDG_CACHE_HOME=cache))
read_until(p, r"^kernels: compiling", "bertc compile ended before compiling kernels")
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
entries = [f for _, _, files in os.walk(cache) for f in files]
if p.wait() != 143 or "compile ended by a signal: no output or kernel-cache entry was half-written" not in rest or \
        os.path.exists(program) or [f for f in entries if not f.endswith(".bin") and not f.startswith(".")]:
    fail(f"SIGTERM while bertc compile compiles: exit {p.returncode} (expected 143 and its message, no program), "
         f"cache {entries}:\n{rest[-1500:]}")
print("SIGTERM during bertc compile:", rest.strip().splitlines()[-1][:200])
# bertc check ends at once on a signal, saying so (it died without a word), and the host C++
# compiler it runs (a process group of its own) ends with it.
cache = os.path.join(WORK, "signalled-check-cache")
p = subprocess.Popen([BERTC, "check", CONFIG, "--device", "host"], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True, env=dict(os.environ, XDG_CACHE_HOME=cache))


def compilers():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if cache.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(pid)
        except OSError:
            pass  # (ended meanwhile)
    return found


for _ in range(600):  # (the first kernel's compiler starts within a second or two)
    if compilers() or p.poll() is not None:
        break
    time.sleep(0.05)
if not compilers():
    fail(f"bertc check ran no host compiler to signal (exit {p.poll()})")
p.send_signal(signal.SIGTERM)
_, said = p.communicate(timeout=60)
time.sleep(0.5)
if p.returncode != 143 or "check ended by a signal before its verdict" not in said or compilers():
    fail(f"SIGTERM to bertc check: exit {p.returncode} (expected 143 and its message), compilers left: {compilers()}:"
         f"\n{said[-1500:]}")
print("SIGTERM during bertc check:", said.strip().splitlines()[-1][:120], "(its compiler ended with it)")

# Under nohup (SIGHUP ignored when the run starts), a SIGHUP (the terminal closing) is ignored, as
# nohup means: the run trains on to its end.
p = subprocess.Popen([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder("nohup")],
                     stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
wait_for_step(p, 3)
p.send_signal(signal.SIGHUP)
rest = p.stderr.read()
if p.wait() != 0 or "step 40/40" not in rest or "stopped by" in rest:
    fail(f"SIGHUP under nohup: exit {p.returncode}, expected the run to go on to step 40:\n{rest[-1000:]}")
print("SIGHUP under nohup: ignored, the run trained to its end")

# SIGQUIT (Ctrl-\\) ends at once, as its default does; a run folder this run made and wrote nothing
# into yet goes with it (it left a folder holding only a lock).
p = subprocess.Popen([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder("quit"), "--data", big],
                     stderr=subprocess.PIPE, text=True,
                     preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))  # (no core file)
read_until(p, "^vocab: ", "the run ended before reading its text")
p.send_signal(signal.SIGQUIT)
p.communicate(timeout=60)
if p.returncode != -signal.SIGQUIT or os.path.exists(folder("quit")):
    fail(f"SIGQUIT while the text is read: exit {p.returncode} (expected -{int(signal.SIGQUIT)}), folder "
         f"{'left' if os.path.exists(folder('quit')) else 'gone'}")
print("SIGQUIT while reading the text: ended at once, the new run folder gone")

# The log's reader goes away (| head, a tee that died): SIGPIPE stops the run as a signal does,
# quietly (its log is gone), with a checkpoint, exit 141, and --resume trains on exactly as before.
p = start("pipe")
wait_for_step(p, 5)
p.stderr.close()
if p.wait() != 141:
    fail(f"SIGPIPE: exit {p.returncode}, expected 141 (128 + SIGPIPE) after a graceful stop")
kept = sorted(f for f in os.listdir(folder("pipe")) if f.startswith("checkpoint-"))
if not kept or int(kept[-1][11:17]) < 5 or int(kept[-1][11:17]) >= 40:
    fail(f"SIGPIPE: no checkpoint of the step it stopped after: {kept}")
resumed = run("pipe", "--resume")
if resumed.returncode != 0 or losses("pipe") != losses("straight"):
    fail(f"SIGPIPE: --resume after the stop failed or differs from the uninterrupted run:\n{resumed.stderr[-1500:]}")
print(f"SIGPIPE: stopped with {kept[-1]}, exit 141; resumed run equals the uninterrupted one")

# A file size limit (ulimit -f) under the checkpoint's size: the write fails as on a full disk (an
# error naming the file and the cause, exit 1), no half-written temporary is left, and nothing
# kills the process (SIGXFSZ, whose default is to).
limited = subprocess.run([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder("file-limit")],
                         capture_output=True, text=True, timeout=600,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000)))
left = os.listdir(folder("file-limit")) if os.path.isdir(folder("file-limit")) else []
# The fix named by the write's errno (EFBIG: room or the limit; a permission error says writable).
if limited.returncode != 1 or "File too large" not in limited.stderr or any(".tmp." in f for f in left) or \
        "make room in" not in limited.stderr or "file size limit" not in limited.stderr:
    fail(f"a checkpoint past the file size limit: exit {limited.returncode} (expected 1), left {left}:\n"
         f"{limited.stderr[-1500:]}")
print("file size limit:", limited.stderr.strip().splitlines()[-1][:200])

# 3. A second signal ends the run at once, here while the stop's checkpoint is half written
# (every write paused halfway): no checkpoint appears, and the half-written file goes with the
# run (said), leaving the next run nothing to sweep.
env = dict(os.environ, BERTC_TEST_SLOW_WRITE_MS="30000")
p = subprocess.Popen([BERTC, "train", CONFIG, "--device", "cpu", "--checkpoint-dir", folder("twice-signalled"),
                      "--steps", "100000"], stderr=subprocess.PIPE, text=True, env=env)
wait_for_step(p, 3)
p.send_signal(signal.SIGINT)
wait_for_file(p, folder("twice-signalled"), ".checkpoint-", "no half-written checkpoint appeared after the first SIGINT")
time.sleep(0.6)  # (apart by more than the 250 ms within which the same signal is one request)
p.send_signal(signal.SIGINT)
rest = p.stderr.read()
if p.wait() != 130 or "ended at once by a second signal" not in rest or "removed the half-written" not in rest:
    fail(f"two SIGINTs: exit {p.returncode}, expected 130 and the messages:\n{rest[-1000:]}")
if any(f.startswith("checkpoint-") or ".tmp." in f for f in os.listdir(folder("twice-signalled"))):
    fail(f"the half-written checkpoint of the stop became a checkpoint, or stayed: {os.listdir(folder('twice-signalled'))}")

# One signal while a periodic checkpoint is being written (every write paused halfway): that
# checkpoint is the stop's, the run does not train a step more and write another.
every5 = os.path.join(WORK, "every5.toml")
open(every5, "w").write(re.sub(r"^checkpoint_every = .*$", "checkpoint_every = 5", open(CONFIG).read(), flags=re.M))
p = subprocess.Popen([BERTC, "train", every5, "--device", "cpu", "--checkpoint-dir", folder("signalled-writing")],
                     stderr=subprocess.PIPE, text=True, env=dict(os.environ, BERTC_TEST_SLOW_WRITE_MS="3000"))
wait_for_step(p, 5)
wait_for_file(p, folder("signalled-writing"), ".checkpoint-", "no half-written checkpoint of step 5 appeared")
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
kept = sorted(f for f in os.listdir(folder("signalled-writing")) if f.startswith("checkpoint-"))
if p.wait() != 143 or "stopped by SIGTERM after step 5:" not in rest or kept != ["checkpoint-000005.safetensors"]:
    fail(f"SIGTERM during step 5's checkpoint: exit {p.returncode} (expected 143, stopped after step 5 with its "
         f"checkpoint alone), kept {kept}:\n{rest[-1000:]}")
print("SIGTERM while a checkpoint is written: stopped after that step, with that checkpoint")

# A signal during bertc export (every write paused halfway, so that it comes mid-export): it stops
# between files, says so, exits 130 and leaves neither the folder nor its staging copy.
exported = os.path.join(WORK, "exported")
p = subprocess.Popen([BERTC, "export", os.path.join(folder("straight"), "checkpoint-000040.safetensors"), "-o", exported],
                     stderr=subprocess.PIPE, text=True, env=dict(os.environ, BERTC_TEST_SLOW_WRITE_MS="2000"))
wait_for_file(p, WORK, ".exported.tmp", "export made no staging folder")
p.send_signal(signal.SIGINT)
rest = p.stderr.read()
left = [f for f in os.listdir(WORK) if f.startswith(".exported") or f == "exported"]
if p.wait() != 130 or f"export: stopped by SIGINT: nothing written to {exported}" not in rest or left:
    fail(f"SIGINT during export: exit {p.returncode} (expected 130), left {left}:\n{rest[-1000:]}")
print("SIGINT during export: stopped, nothing left")
# The part-made copy an export ended at once left (a second signal: its process gone) is removed,
# and said, by the next export to that folder.
dead = os.path.join(WORK, ".exported2.tmp.99999999")  # (a pid past the kernel's pid_max: gone)
os.makedirs(dead)
open(os.path.join(dead, "model.safetensors"), "w").write("half")
p = subprocess.run([BERTC, "export", os.path.join(folder("straight"), "checkpoint-000040.safetensors"), "-o",
                    os.path.join(WORK, "exported2")], capture_output=True, text=True, timeout=600)
if p.returncode != 0 or os.path.exists(dead) or "the part-made copy of an export that ended at once" not in p.stderr:
    fail(f"an export did not remove (and say) the copy a stopped export left:\n{p.stderr[-1000:]}")

# export onto a full disk: the error's fix names the folder the export goes into (make room there),
# not its staging copy, which is gone; nothing is left.
tmpfs = os.path.join(WORK, "small-disk")
os.makedirs(tmpfs)
full = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=60k tmpfs '{tmpfs}' && '{BERTC}' export "
                       f"'{os.path.join(folder('straight'), 'checkpoint-000040.safetensors')}' -o '{tmpfs}/e'; "
                       f"echo \"exit $?\"; ls -A '{tmpfs}'"], capture_output=True, text=True, timeout=600)
if "exit " not in full.stdout:
    print("export onto a full disk: skipped (no mount namespace here:", full.stderr.strip()[:120], ")")
else:
    # ... and how much room (the export's files; its model file was not cut short here): a disk of
    # that size holds it.
    needs = re.search(rf"No space left on device: it needs ([\d.]+) (KiB|MiB) there and [\d.]+ (KiB|MiB) is free: "
                      rf"make room for [\d.]+ (KiB|MiB) more in {re.escape(tmpfs)} ", full.stderr)
    if full.stdout.strip() != "exit 1" or not needs:
        fail(f"export onto a full disk: expected exit 1, the fix naming {tmpfs} and the room needed, and nothing "
             f"left:\n{full.stdout}\n{full.stderr[-1500:]}")
    print("export onto a full disk:", full.stderr.strip().splitlines()[-1][:300])
    room = f"{math.ceil(float(needs.group(1)))}{'k' if needs.group(2) == 'KiB' else 'm'}"
    fits = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={room} tmpfs '{tmpfs}' && '{BERTC}' "
                           f"export '{os.path.join(folder('straight'), 'checkpoint-000040.safetensors')}' -o "
                           f"'{tmpfs}/e'; echo \"exit $?\""], capture_output=True, text=True, timeout=600)
    if fits.stdout.strip() != "exit 0":
        fail(f"export onto a disk of the {room} the error named failed:\n{fits.stdout}\n{fits.stderr[-1500:]}")
    print(f"  onto a disk of the {room} it named: exported")

# export into a folder that is there (empty) fills that folder, never replaces it: its inode and
# mode stay (a private 0700 folder became a new 0755 one), and a mount point (a container's bind
# mount) is filled, not refused as "busy". A part-made copy inside it, of an export whose process
# is gone, is removed first (it would make the folder not empty).
private = os.path.join(WORK, "private-export")
os.makedirs(private)
os.chmod(private, 0o700)
before = os.stat(private)
os.makedirs(os.path.join(private, ".private-export.tmp.99999999"))
p = subprocess.run([BERTC, "export", os.path.join(folder("straight"), "checkpoint-000040.safetensors"), "-o", private],
                   capture_output=True, text=True, timeout=600)
after = os.stat(private)
if (p.returncode != 0 or after.st_ino != before.st_ino or (after.st_mode & 0o777) != 0o700 or
        sorted(os.listdir(private)) != ["config.json", "model.safetensors", "special_tokens_map.json",
                                        "tokenizer_config.json", "vocab.txt"]):
    fail(f"export into an empty 0700 folder: exit {p.returncode}, inode {before.st_ino} -> {after.st_ino}, mode "
         f"{oct(after.st_mode & 0o777)}, holds {sorted(os.listdir(private))}:\n{p.stderr[-1000:]}")
print("export into an empty 0700 folder: filled, inode and mode kept")
mount_point = os.path.join(WORK, "mount-point")
os.makedirs(mount_point)
mounted = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=10m tmpfs '{mount_point}' && '{BERTC}' "
                          f"export '{os.path.join(folder('straight'), 'checkpoint-000040.safetensors')}' -o "
                          f"'{mount_point}'; echo \"exit $?\"; ls -A '{mount_point}'"],
                         capture_output=True, text=True, timeout=600)
if "exit " not in mounted.stdout:
    print("export onto a mount point: skipped (no mount namespace here:", mounted.stderr.strip()[:120], ")")
elif mounted.stdout.split() != ["exit", "0", "config.json", "model.safetensors", "special_tokens_map.json",
                                "tokenizer_config.json", "vocab.txt"]:
    fail(f"export onto a mount point:\n{mounted.stdout}\n{mounted.stderr[-1500:]}")
else:
    print("export onto a mount point: filled")

# Metrics onto a full disk: the run stops after the step whose line failed, with a checkpoint that
# carries that line, and says so (exit 1); the file keeps its whole lines. Room made, --resume puts
# the line back and goes on: the file then holds every step once, equal to the uninterrupted run.
# (Training on without metrics lost every later line, said nowhere, and exited 0.)
metrics_disk = os.path.join(WORK, "small-metrics-disk")
os.makedirs(metrics_disk)
kept_metrics = os.path.join(WORK, "metrics-after-full-disk.jsonl")
train = f"'{BERTC}' train '{CONFIG}' --device cpu --checkpoint-dir '{folder('metrics-full')}' --metrics '{metrics_disk}/m.jsonl'"
full = subprocess.run(["unshare", "-m", "sh", "-c",
                       f"mount -t tmpfs -o size=16k tmpfs '{metrics_disk}' && head -c 10000 /dev/zero > '{metrics_disk}/fill'"
                       f" && {train} 2> '{WORK}/metrics-full.log'; echo \"exit $?\"; rm '{metrics_disk}/fill'; "
                       f"{train} --resume 2> '{WORK}/metrics-resumed.log'; echo \"exit $?\"; "
                       f"cp '{metrics_disk}/m.jsonl' '{kept_metrics}'"],
                      capture_output=True, text=True, timeout=600)
if "exit " not in full.stdout:
    print("metrics onto a full disk: skipped (no mount namespace here:", full.stderr.strip()[:120], ")")
else:
    said, resumed_log = open(f"{WORK}/metrics-full.log").read(), open(f"{WORK}/metrics-resumed.log").read()
    stopped = re.search(r"writing step (\d+)'s metrics failed \(No space left on device\).*the run stopped after step "
                        r"\1, with its checkpoint", said)
    steps = [json.loads(line)["step"] for line in open(kept_metrics)]
    straight = [m[1] for m in losses("straight")]
    if full.stdout.split() != ["exit", "1", "exit", "0"] or not stopped or \
            "put back from its checkpoint" not in resumed_log or steps != list(range(1, 41)) or \
            [json.loads(line)["loss"] for line in open(kept_metrics)] != straight:
        fail(f"metrics onto a full disk: {full.stdout.split()}, steps {steps}:\n{said[-1500:]}\n{resumed_log[-1500:]}")
    print(f"metrics onto a full disk: stopped after step {stopped.group(1)}; resumed, every step's line once")

# A signal during fine-tuning: it stops after the step with a checkpoint, exit 143, and its last
# line counts the whole epochs (the one it stopped in is said as part of one, not as an epoch).
ft_text = open(os.path.join(SOURCE, "tests", "lit", "Inputs", "finetune-test.toml")).read()
ft_text = ft_text.replace("../../../examples/", f"{SOURCE}/examples/")
open(os.path.join(WORK, "ft.toml"), "w").write(ft_text)
p = subprocess.Popen([BERTC, "finetune", os.path.join(WORK, "ft.toml"), "--device", "cpu", "--epochs", "50",
                      "--checkpoint-dir", folder("ft-stopped")], stderr=subprocess.PIPE, text=True)
read_until(p, r"^step \d+/\d+ \(epoch 1\)", "fine-tuning ended before its first step line")
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
if p.wait() != 143 or "finetune: 0 epochs and part of epoch 1 (stopped)" not in rest or \
        not any(f.startswith("checkpoint-") for f in os.listdir(folder("ft-stopped"))):
    fail(f"SIGTERM during fine-tuning: exit {p.returncode}, expected 143, a checkpoint and 0 whole epochs:\n{rest[-1000:]}")
print("SIGTERM during fine-tuning:", rest.strip().splitlines()[-1][:160])

# A second signal while the host compiler runs: the compiler (its whole process group: the driver
# and what it started) ends with bertc, instead of running on for nothing.
slow = os.path.join(WORK, "slow-c++")
compiler_pids = os.path.join(WORK, "compiler-pids")
with open(slow, "w") as out:
    out.write(f"#!/bin/sh\necho $$ >> '{compiler_pids}'\nsleep 120 &\necho $! >> '{compiler_pids}'\nwait\n")
os.chmod(slow, 0o755)
p = subprocess.Popen([BERTC, "train", CONFIG, "--device", "host", "--checkpoint-dir", folder("compiling")],
                     stderr=subprocess.PIPE, text=True,
                     env=dict(os.environ, BERTC_HOST_CXX=slow, XDG_CACHE_HOME=os.path.join(WORK, "slow-cache")))
deadline = time.time() + 300
while not os.path.exists(compiler_pids) or len(open(compiler_pids).read().split()) < 2:
    if time.time() > deadline or p.poll() is not None:
        p.kill()
        fail(f"the host compiler was never started (exit {p.poll()}):\n{p.stderr.read()[-1500:]}")
    time.sleep(0.05)
p.send_signal(signal.SIGINT)
time.sleep(0.6)  # (apart by more than the 250 ms within which the same signal is one request)
p.send_signal(signal.SIGINT)
rest = p.communicate(timeout=60)[1]
if p.returncode != 130 or "ended at once by a second signal" not in rest:
    fail(f"two SIGINTs while compiling: exit {p.returncode}, expected 130 and the message:\n{rest[-1000:]}")


def ended(pid):
    try:
        return open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"  # (a zombie runs no more)
    except (FileNotFoundError, ProcessLookupError):
        return True


deadline = time.time() + 10
while not all(ended(int(pid)) for pid in open(compiler_pids).read().split()) and time.time() < deadline:
    time.sleep(0.05)
if not all(ended(int(pid)) for pid in open(compiler_pids).read().split()):
    fail(f"the host compiler's processes {open(compiler_pids).read().split()} outlived bertc ended at once")
print("two SIGINTs while compiling: bertc and the compiler's group ended at once")

# 4. A SIGKILL leaves the lock file with its holder's pid: the next run takes it over.
p = start("killed")
wait_for_step(p, 3)
p.kill()
p.wait()
for name, expect in (("killed", "ended without unlocking it"), ("twice-signalled", "kept as")):
    after = run(name, "--steps", "2")
    if after.returncode != 0 or expect not in after.stderr:
        fail(f"the run after an interrupted one in {name}: exit {after.returncode}, no '{expect}':\n"
             f"{after.stderr[-1500:]}")
    print(f"after {name}:", next(l for l in after.stderr.splitlines() if expect in l)[:150])

# 5. Damaged checkpoints: refused naming what is wrong; the older one is untouched and resumes.
name = "damaged"
if run(name, "--until", "20", "--steps", "40").returncode != 0 or run(name, "--until", "30", "--resume").returncode:
    fail("could not make two checkpoints to damage")
newest = os.path.join(folder(name), "checkpoint-000030.safetensors")
pristine = open(newest, "rb").read()
header = struct.unpack("<Q", pristine[:8])[0]
cases = {
    "a flipped bit in a tensor": lambda b: b[:8 + header + 100] + bytes([b[8 + header + 100] ^ 0x10]) + b[8 + header + 101:],
    "the step edited in the metadata": lambda b: b.replace(b'"step":"30"', b'"step":"-5"'),
}
for what, damage in cases.items():
    bad = damage(pristine)
    if bad == pristine:
        fail(f"{what}: the test could not damage the file")
    open(newest, "wb").write(bad)
    before = digests(name)
    p = run(name, "--resume")
    if p.returncode == 0 or "checksum" not in p.stderr or "step 31/" in p.stderr:
        fail(f"{what}: --resume was not refused before training (exit {p.returncode}):\n{p.stderr[-1500:]}")
    if digests(name) != before:
        fail(f"{what}: the refused resume changed the run folder's checkpoints")
    print(f"{what}: refused:", next(l for l in p.stderr.splitlines() if "checksum" in l)[:170])
# The damaged one moved aside, the run resumes from the one before and ends as the straight run.
os.rename(newest, os.path.join(WORK, "damaged-checkpoint.safetensors"))
p = run(name, "--resume")
if p.returncode != 0 or "(step 20)" not in p.stderr:
    fail(f"resuming from the older checkpoint failed:\n{p.stderr[-1500:]}")
# (Steps 21-30 were recorded by the run whose checkpoint was damaged: the resume drops them.)
if losses(name) != losses("straight"):
    fail("after resuming from the older checkpoint, the metrics differ from the uninterrupted run's "
         f"(steps {[s for s, _, _ in losses(name)]})")

# 6. Damaged metrics lines: one whose loss was edited (still valid JSON) and one a crash cut short
# fail their checksums and are dropped on resume, named as damaged; every other line stays as it was.
name = "metrics"
if run(name, "--until", "10").returncode != 0:
    fail("could not make a run to damage its metrics")
metrics_path = os.path.join(folder(name), "metrics.jsonl")
lines = open(metrics_path).read().splitlines(keepends=True)
edited = re.sub(r'"loss":(\d)', lambda m: '"loss":' + str((int(m.group(1)) + 1) % 10), lines[4], count=1)
if edited == lines[4] or json.loads(edited)["step"] != 5:
    fail("the test could not edit metrics line 5")
open(metrics_path, "w").write("".join(lines[:4] + [edited] + lines[5:]) + lines[-1][:len(lines[-1]) // 2])
p = run(name, "--resume", "--until", "12")
if p.returncode != 0 or "2 damaged line(s)" not in p.stderr:
    fail(f"the damaged metrics lines were not dropped on resume, or not named:\n{p.stderr[-1500:]}")
after = open(metrics_path).read().splitlines(keepends=True)
if after[:4] != lines[:4] or after[4:9] != lines[5:10] or [json.loads(l)["step"] for l in after[9:]] != [11, 12]:
    fail(f"the intact metrics lines did not survive the resume unchanged: steps {[json.loads(l)['step'] for l in after]}")
print("damaged metrics lines:", next(l for l in p.stderr.splitlines() if "damaged line" in l)[:170])

# 7. A resume with other settings than the checkpoint's (a learning rate) is refused before
# training, naming the key and both values; the folder's files are untouched.
changed = os.path.join(WORK, "changed-lr.toml")
open(changed, "w").write(re.sub(r"^learning_rate = .*$", "learning_rate = 5e-4", text, flags=re.M))
before = (digests(name), open(metrics_path, "rb").read())
p = subprocess.run([BERTC, "train", changed, "--device", "cpu", "--checkpoint-dir", folder(name), "--resume"],
                   capture_output=True, text=True, timeout=600)
if p.returncode == 0 or "[train] learning_rate = 0.001 then, 0.0005 now" not in p.stderr or "step 13/" in p.stderr:
    fail(f"a resume with another learning rate was not refused naming it (exit {p.returncode}):\n{p.stderr[-1500:]}")
if (digests(name), open(metrics_path, "rb").read()) != before:
    fail("the refused resume with other settings changed the run folder")
print("other settings refused:", p.stderr.strip().splitlines()[-1][:200])

# 8. SIGTERM, SIGINT or SIGKILL at a random moment (seeded; start-up, a step, a checkpoint being
# written): whatever the run left is whole. The folder holds only bertc's files, every checkpoint
# in it loads (checksums), and the run resumed from it ends exactly as the uninterrupted one.
import random
seed = int(os.environ.get("BERTC_FAULT_SEED", "8"))
rng = random.Random(seed)
periodic = os.path.join(WORK, "periodic.toml")
open(periodic, "w").write(re.sub(r"^checkpoint_every = .*$", "checkpoint_every = 4", text, flags=re.M))
# Start-up takes most of a run this short: half the moments are drawn from its training alone.
p = subprocess.Popen([BERTC, "train", periodic, "--device", "cpu", "--checkpoint-dir", folder("timing")],
                     stderr=subprocess.PIPE, text=True)
wait_for_step(p, 1)
began = time.time()
p.communicate(timeout=600)
if p.returncode != 0:
    fail("the run with a checkpoint every 4 steps failed")
length = time.time() - began
for attempt in range(6):
    name, sig = f"random-{attempt}", rng.choice([signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
    delay = rng.uniform(0, length)
    p = subprocess.Popen([BERTC, "train", periodic, "--device", "cpu", "--checkpoint-dir", folder(name)],
                         stderr=subprocess.PIPE, text=True)
    if attempt % 2 == 0:
        wait_for_step(p, 1)
    time.sleep(delay)
    p.send_signal(sig)
    err = p.communicate(timeout=600)[1]
    expected = {signal.SIGTERM: (143, 0), signal.SIGINT: (130, 0), signal.SIGKILL: (-9, 0)}[sig]
    if attempt % 2 == 1:  # (a signal before bertc's handlers exist, on a loaded machine: its default, nothing written)
        expected = (*expected, -int(sig))
    if p.returncode not in expected:
        fail(f"{sig.name} after {delay:.2f} s (seed {seed}): exit {p.returncode}, expected one of {expected}:\n{err[-1500:]}")
    left = sorted(os.listdir(folder(name))) if os.path.isdir(folder(name)) else []  # (stopped before making it)
    strays = [f for f in left if not re.fullmatch(r"checkpoint-\d{6}\.safetensors|metrics\.jsonl|\.bertc-lock|\..*\.tmp\..*", f)]
    if strays:
        fail(f"{sig.name} after {delay:.2f} s (seed {seed}) left files that are not bertc's: {strays}")
    checkpoints = [f for f in left if f.startswith("checkpoint-")]
    resumed = run(name, *(["--resume"] if checkpoints else []))
    # A run from step 1 where this one was killed keeps the killed run's lines aside whole (its
    # steps are not in the new file twice, and nothing is lost): another run's, by their run id.
    for aside in [f for f in os.listdir(folder(name)) if ".earlier-" in f]:
        runs = lambda path: {json.loads(l).get("run") for l in open(path) if '"step":' in l and l.endswith("}\n")}
        if runs(os.path.join(folder(name), aside)) & runs(os.path.join(folder(name), "metrics.jsonl")):
            fail(f"{sig.name} after {delay:.2f} s (seed {seed}): {aside} holds lines of the run that followed")
    if resumed.returncode != 0 or losses(name) != losses("straight"):
        fail(f"{sig.name} after {delay:.2f} s (seed {seed}), folder {left}: the resumed run failed or differs from "
             f"the uninterrupted one (exit {resumed.returncode}):\n{resumed.stderr[-1500:]}")
    print(f"{sig.name} {delay:.2f} s after {'step 1' if attempt % 2 == 0 else 'the start'} (training {length:.2f} s): exit {p.returncode}, left {len(checkpoints)} checkpoint(s); "
          "resumed run equals the uninterrupted one")

# Fine-tuning onto a full disk: the room named is the whole run's (its newest checkpoints, one more
# while the oldest waits to go, and its best), so that a disk of that size holds a run started
# again (the figure was one checkpoint's, and the run started again failed a step later).
ft_disk = os.path.join(WORK, "small-finetune-disk")
os.makedirs(ft_disk)
sts = os.path.join(WORK, "sts.tsv")
open(sts, "w").write("sentence1\tsentence2\tscore\nanna lives in york.\tanna lives in york.\t5.0\n"
                     "ben has a cat.\tthe dog is old.\t0.5\nthe cat is red.\tthe cat is blue.\t2.5\n")
sts_config = os.path.join(WORK, "sts3.toml")
open(sts_config, "w").write(re.sub(r"(?m)^epochs = .*$", "epochs = 3",
                                   open(os.path.join(SOURCE, "tests/lit/Inputs/finetune-sts.toml")).read())
                            .replace('"../../../examples/', f'"{SOURCE}/examples/'))
finetune = f"'{BERTC}' finetune '{sts_config}' --train-data '{sts}' --dev-data '{sts}' --device cpu"
full = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=200k tmpfs '{ft_disk}' && {finetune} "
                       f"--checkpoint-dir '{ft_disk}/r'; echo \"exit $?\""], capture_output=True, text=True, timeout=600)
if "exit " not in full.stdout:
    print("fine-tuning onto a full disk: skipped (no mount namespace here)")
else:
    needs = re.search(r"it needs ([\d.]+) (KiB|MiB) there", full.stderr)
    # (the figure, several checkpoints' size, says why)
    if full.stdout.strip() != "exit 1" or not needs or "checkpoints: the most the run holds at once)" not in full.stderr:
        fail(f"fine-tuning onto a full disk: expected exit 1 and the room needed:\n{full.stdout}\n{full.stderr[-1500:]}")
    room = f"{math.ceil(float(needs.group(1)) * (1024 if needs.group(2) == 'MiB' else 1))}k"
    fits = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={room} tmpfs '{ft_disk}' && {finetune} "
                           f"--checkpoint-dir '{ft_disk}/r2'; echo \"exit $?\""], capture_output=True, text=True,
                          timeout=600)
    if fits.stdout.strip() != "exit 0":
        fail(f"fine-tuning onto a disk of the {room} named failed:\n{fits.stdout}\n{fits.stderr[-1500:]}")
    print(f"fine-tuning onto a full disk: {needs.group(1)} {needs.group(2)} named; a disk of {room} held the run")

print("PASS")
