#!/usr/bin/env python3
"""bertc's CUDA device on bertc's emulated CUDA driver and cuBLAS (cuda_emulation/, a P40 of 2 GiB):
`bertc check --device cuda` compares every value of a step and an optimizer step with the reference
(and on a V100, an A100 and an H200 in fp16 and bf16); `bertc train --device cuda` (its step
recorded as a CUDA Graph and replayed) in each GPU's precisions, with generated kernels and with
cuBLAS, gives the Host device's losses for the same kernels; --eager gives the graph's losses; an
fp16 step skipped under loss scaling on a V100 as on the Host device; --batch-size auto against the
GPU's memory; a compiled program of PTX images with no NVRTC; fine-tuning; no MFU is printed, as the
driver keeps no time, and --profile prints the driver's counts of the step's kernels. The same CudaDevice code a GPU user runs, loaded
through BERTC_CUDA_DRIVER and BERTC_CUBLAS and handed PTX (BERTC_CUDA_PTX=1).

usage: train_on_emulated_cuda.py BERTC LIBCUDA LIBCUBLAS SOURCE_DIR WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

bertc, libcuda, libcublas, source, work = sys.argv[1:6]
config = os.path.join(source, "tests", "lit", "Inputs", "test-tiny.toml")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
emulated = dict(os.environ, BERTC_CUDA_DRIVER=libcuda, BERTC_CUBLAS=libcublas, BERTC_EMULATED_GPU="p40", BERTC_EMULATED_GPU_MEMORY_MB="2048",
                BERTC_CUDA_PTX="1", XDG_CACHE_HOME=os.path.join(work, "cache"))


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def run(args, env, what):
    p = subprocess.run([bertc] + args, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        fail(f"{what} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stderr + p.stdout


said = run(["check", config, "--device", "cuda"], emulated, "bertc check --device cuda")
if "bertc's emulated driver" not in said or " 0 beyond " not in said:
    fail(f"the check did not run on the emulated P40 or found values beyond its tolerance:\n{said}")
print("check --device cuda on the emulated P40:", [l for l in said.splitlines() if l.startswith(("step:", "optimizer:"))])
# The other GPUs of the issue, each in its arch's precision (auto): V100 fp16 (mma.m8n8k4), A100 and
# H200 bf16 (mma.m16n8k16, ldmatrix, cp.async), every value within bertc check's tolerances.
for gpu, precision in (("v100", "fp16"), ("a100", "bf16"), ("h200", "bf16")):
    said = run(["check", config, "--device", "cuda"], dict(emulated, BERTC_EMULATED_GPU=gpu), f"check on an emulated {gpu}")
    if f"{precision} precision" not in said or " 0 beyond " not in said:
        fail(f"the check on an emulated {gpu} did not run in {precision} or found values beyond its tolerance:\n{said}")
    print(f"check --device cuda on an emulated {gpu} ({precision}):",
          [l.split(" (")[0] for l in said.splitlines() if l.startswith(("step:", "optimizer:"))])

def losses_of(folder):
    return [json.loads(line)["loss"] for line in open(os.path.join(folder, "metrics.jsonl")) if '"loss"' in line]


def train(device, env, folder, extra):
    said = run(["train", config, "--device", device, "--steps", "4", "--checkpoint-dir", folder] + extra, env,
               f"train --device {device} {' '.join(extra)}")
    return said, losses_of(folder)


# Each GPU's training on the emulated driver against the Host device running the same arch's
# kernels (and, with --matmul library, its host run of the same cuBLAS calls): P40 fp32 (also with
# fp16 storage, and with every product in the emulated cuBLAS), V100 fp16 (loss scaling), A100 bf16
# and tf32 (generated mma.m16n8k8 kernels, and cuBLAS's TF32 mode), H200 bf16. The PTX NVRTC emits
# and the host compiler's build of the same kernel sources may contract multiply-adds into FMAs
# differently, and the emulated cuBLAS sums in float where the Host device sums in double, so a loss
# may differ in its last bits (4.8e-7 of 6.48 was seen at P40 fp32's step 1): 1e-5 relative in fp32,
# about 100 ulps there; where values are stored in 16 bits or products take TF32 inputs, such a
# difference can flip one rounding (2^-11 and 2^-8 relative), so 1e-3 there — far below what a
# wrong kernel moves.
host_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
scenarios = [("p40", "fp32", "generated", 1e-5), ("p40", "fp32-fp16storage", "generated", 1e-3),
             ("p40", "fp32", "library", 1e-5), ("v100", "fp16", "generated", 1e-3),
             ("a100", "bf16", "generated", 1e-3), ("a100", "tf32", "generated", 1e-3),
             ("a100", "tf32", "library", 1e-3), ("h200", "bf16", "generated", 1e-3)]
for gpu, precision, matmul, tolerance in scenarios:
    extra = ["--precision", precision, "--matmul", matmul]
    name = f"{gpu}-{precision}-{matmul}"
    said, cuda = train("cuda", dict(emulated, BERTC_EMULATED_GPU=gpu), os.path.join(work, name + "-cuda"), extra)
    if "graph: recorded one device graph" not in said:
        fail(f"training on the emulated {gpu} ({precision}, {matmul}) recorded no CUDA Graph:\n{said}")
    if "MFU" in said:  # (the emulator's wall clock against a GPU's peak is no GPU figure)
        fail(f"training on the emulated {gpu} printed an MFU:\n{said}")
    if matmul == "library" and "cuBLAS gemm" in said:
        fail(f"the emulated cuBLAS said something while training:\n{said}")
    _, host = train("host", host_env, os.path.join(work, name + "-host"), extra + ["--arch", gpu])
    if len(cuda) != 4 or len(host) != 4:
        fail(f"{name}: expected 4 losses from each run: cuda {cuda}, host {host}")
    for step, (a, b) in enumerate(zip(cuda, host), 1):
        if abs(a - b) > tolerance * abs(b):
            fail(f"{name} step {step}: loss {a} on the emulated CUDA driver, {b} on the Host device")
    apart = max(abs(a - b) / abs(b) for a, b in zip(cuda, host))
    print(f"train --device cuda on an emulated {gpu}, {precision}, --matmul {matmul} (a CUDA Graph replayed) equals "
          f"the Host device (largest relative difference {apart:.1e}):", cuda)

# The library runs above went through the emulated cuBLAS: without it, the same run stops.
p = subprocess.run([bertc, "train", config, "--device", "cuda", "--steps", "1", "--matmul", "library", "--checkpoint-dir",
                    os.path.join(work, "no-cublas")], env=dict(emulated, BERTC_CUBLAS=os.path.join(work, "none.so")),
                   capture_output=True, text=True, timeout=900)
if p.returncode == 0 or "no cuBLAS" not in p.stderr:
    fail(f"--matmul library with no cuBLAS to load: exit {p.returncode}, expected a refusal:\n{p.stderr[-2000:]}")

# The step's CUDA Graph against the same launches issued one by one (--eager): the same kernels on
# the same values, so the same losses, to the bit.
_, eager = train("cuda", emulated, os.path.join(work, "p40-eager"), ["--eager"])
graphed = losses_of(os.path.join(work, "p40-fp32-generated-cuda"))
if eager != graphed:
    fail(f"the P40's losses issued eagerly {eager} differ from those of its CUDA Graph {graphed}")
print("--eager on the emulated P40 gives the CUDA Graph's losses to the bit:", eager)

def metrics_of(folder):
    """The per-step records (not fine-tuning's epoch records)."""
    return [m for m in map(json.loads, open(os.path.join(folder, "metrics.jsonl"))) if "loss" in m]


def edited_config(name, **keys):
    """test-tiny with [train] keys replaced, its data paths absolute."""
    text = open(config).read().replace('"../../../examples', f'"{source}/examples')
    for key, value in keys.items():
        lines = [l for l in text.splitlines() if not l.startswith(f"{key} = ")]
        text = "\n".join(lines).replace("[train]", f"[train]\n{key} = {value}", 1) + "\n"
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


# Loss scaling on the emulated V100: a learning rate hot enough to overflow fp16 (0.3) skips step 3
# and halves the scale at step 4, the same trajectory, skip for skip, as the Host device's.
hot = edited_config("hot", learning_rate=0.3)
scales = {}
for device, env, extra in (("cuda", dict(emulated, BERTC_EMULATED_GPU="v100"), []), ("host", host_env, ["--arch", "v100"])):
    folder = os.path.join(work, f"hot-{device}")
    run(["train", hot, "--device", device, "--steps", "4", "--precision", "fp16", "--checkpoint-dir", folder] + extra,
        env, f"a hot fp16 run on {device}")
    scales[device] = [(m["loss_scale"], m["step_skipped"]) for m in metrics_of(folder)]
if scales["cuda"] != scales["host"] or sum(skipped for _, skipped in scales["cuda"]) != 1:
    fail(f"loss scaling on the emulated V100 {scales['cuda']}, on the Host device {scales['host']}: expected the same, "
         "with one step skipped")
print("a skipped fp16 step on the emulated V100 (scale, skipped):", scales["cuda"])

# --batch-size auto against the emulated GPU's memory (2 MiB): 16 sequences a step do not fit at
# once, so it splits them (8 x 2) and trains; without it, the run stops out of memory, naming it.
small = dict(emulated, BERTC_EMULATED_GPU_MEMORY_MB="2")
b16 = edited_config("b16", batch_size=16)
said = run(["train", b16, "--device", "cuda", "--steps", "1", "--batch-size", "auto", "--checkpoint-dir",
            os.path.join(work, "auto")], small, "--batch-size auto on a 2 MiB GPU")
if "micro-batch 8 x 2 needs" not in said or ": chosen" not in said or "step 1/1" not in said:
    fail(f"--batch-size auto did not choose 8 x 2 on a 2 MiB GPU and train:\n{said}")
p = subprocess.run([bertc, "train", b16, "--device", "cuda", "--steps", "1", "--checkpoint-dir", os.path.join(work, "oom")],
                   env=small, capture_output=True, text=True, timeout=900)
if p.returncode == 0 or "out of GPU memory" not in p.stderr or "--batch-size auto" not in p.stderr:
    fail(f"16 sequences on a 2 MiB GPU: exit {p.returncode}, expected out of memory naming --batch-size auto:\n{p.stderr}")
print("--batch-size auto on the emulated 2 MiB P40:", next(l for l in said.splitlines() if ": chosen" in l))

# A compiled program (.bertx) with its kernels as PTX trains on the emulated driver with no NVRTC,
# its losses those of training from the config there, bit for bit (the same kernels); one of
# cubins is refused, naming --images ptx.
program = os.path.join(work, "tiny.bertx")
run(["compile", config, "--arch", "sm_61", "--images", "ptx", "-o", program], host_env, "bertc compile --images ptx")
no_nvrtc = dict(emulated, BERTC_NVRTC=os.path.join(work, "no-nvrtc.so"))
del no_nvrtc["BERTC_CUDA_PTX"]
data = ["--data", os.path.join(source, "examples", "data", "corpus.txt"), "--vocab",
        os.path.join(source, "examples", "data", "vocab.txt")]
run(["train", program, "--device", "cuda", "--steps", "4", "--checkpoint-dir", os.path.join(work, "bertx")] + data,
    no_nvrtc, "train FILE.bertx --device cuda")
from_program = losses_of(os.path.join(work, "bertx"))
if from_program != graphed:
    fail(f"the .bertx's losses {from_program} differ from the config's {graphed} on the emulated P40")
cubins = os.path.join(work, "cubins.bertx")
run(["compile", config, "--arch", "sm_61", "-o", cubins], host_env, "bertc compile")
p = subprocess.run([bertc, "train", cubins, "--device", "cuda", "--steps", "1", "--checkpoint-dir",
                    os.path.join(work, "cubins")] + data, env=no_nvrtc, capture_output=True, text=True, timeout=900)
if p.returncode == 0 or "--images ptx" not in p.stderr:
    fail(f"a .bertx of cubins on the emulated driver: exit {p.returncode}, expected a refusal naming --images ptx:\n"
         f"{p.stderr[-2000:]}")
print("train FILE.bertx (PTX images) --device cuda with no NVRTC equals the config's losses:", from_program)

# Fine-tuning on the emulated P40: each length bucket's program, dev evaluation without a backward,
# the Host device's losses for the same kernels.
task = os.path.join(source, "examples", "data", "task")
tune = os.path.join(source, "tests", "lit", "Inputs", "finetune-test.toml")
for name, lines in (("train", 41), ("dev", 13)):
    with open(os.path.join(task, f"{name}.tsv")) as f, open(os.path.join(work, f"{name}.tsv"), "w") as out:
        out.writelines(f.readlines()[:lines])
tuned = {}
for device, env in (("cuda", emulated), ("host", host_env)):
    folder = os.path.join(work, f"finetune-{device}")
    said = run(["finetune", tune, "--device", device, "--train-data", os.path.join(work, "train.tsv"), "--dev-data",
                os.path.join(work, "dev.tsv"), "--checkpoint-dir", folder], env, f"finetune --device {device}")
    tuned[device] = metrics_of(folder)
if len(tuned["cuda"]) != len(tuned["host"]) or not tuned["cuda"] or any(
        abs(a["loss"] - b["loss"]) > 1e-5 * abs(b["loss"]) for a, b in zip(tuned["cuda"], tuned["host"])):
    fail(f"finetune on the emulated P40 {[m['loss'] for m in tuned['cuda']]} vs the Host device "
         f"{[m['loss'] for m in tuned['host']]}")
print(f"finetune --device cuda on the emulated P40 equals the Host device over {len(tuned['cuda'])} records")

# A driver that keeps no time but counts: --profile prints the step's counts on the PTX emulator and
# the projections from them, said as such, one record a kernel launch of the step's graph; no
# profile JSON (which holds measured times) is written.
folder = os.path.join(work, "profile")
said = run(["train", config, "--device", "cuda", "--steps", "3", "--profile", "3", "--checkpoint-dir", folder], emulated,
           "--profile on the emulated driver")
launched = re.search(r"profile of step 3: the emulated GPU's counts of its (\d+) kernel launches \(the device keeps no "
                     r"time: counts and projections, not measurements", said)
graph = re.search(r"graph: recorded one device graph of \d+ nodes: (\d+) kernels", said)
if not launched or not graph or launched.group(1) != graph.group(1) or "projected on the Tesla P40" not in said:
    fail(f"--profile on the emulated driver did not count the step graph's kernels:\n{said}")
if os.path.exists(os.path.join(folder, "profile-step3.json")):
    fail("--profile on the emulated driver wrote a profile of measured times")
print(f"--profile on the emulated driver: counts of the step's {launched.group(1)} launches,",
      next(l.strip() for l in said.splitlines() if "projected on the Tesla P40" in l))
