#!/usr/bin/env python3
"""bertc's CUDA device on bertc's emulated CUDA driver and cuBLAS (cuda_emulation/, a P40 of 2 GiB):
`bertc check --device cuda` compares every value of a step and an optimizer step with the reference
(and on a V100, an A100 and an H200 in fp16 and bf16); `bertc train --device cuda` (its step
recorded as a CUDA Graph and replayed) in each GPU's precisions, with generated kernels and with
cuBLAS, gives the Host device's losses for the same kernels; --eager gives the graph's losses; an
fp16 step skipped under loss scaling on a V100 as on the Host device; --batch-size auto against the
GPU's memory; a compiled program of PTX images with no NVRTC; fine-tuning; no MFU is printed, as the
driver keeps no time, and --profile prints the driver's counts of the step's kernels. The same
CudaDevice code a GPU user runs, loaded through BERTC_CUDA_DRIVER and BERTC_CUBLAS and handed PTX
(BERTC_CUDA_PTX=1).

On a GPU (tests/gpu/run.sh: LIBCUDA and LIBCUBLAS "system"), the same scenarios run on NVIDIA's
driver and cuBLAS, each emulated GPU's kernels as PTX for its arch (--arch p40 ...) on the GPU
present, against the CPU reference (the GPU machine may have no host compiler for the Host device)
within 1e-3, as the GPU check's other training pairs: a first GPU run compares with what emulation
gave. What a GPU cannot show the same way is left out there, said as such: the emulated memory's
out-of-memory (--device-memory plans the auto batch instead), a cubin program refused, counted
profiles (a GPU's --profile measures).

usage: train_on_emulated_cuda.py BERTC LIBCUDA LIBCUBLAS SOURCE_DIR WORK_DIR [checks|train|features|all]
"""
import json
import os
import re
import shutil
import subprocess
import sys

bertc, libcuda, libcublas, source, work = sys.argv[1:6]
PART = sys.argv[6] if len(sys.argv) > 6 else "all"  # checks, train, features or all
source = os.path.abspath(source)  # (the configs written under work name its data)
REAL = libcuda == "system"  # NVIDIA's driver and cuBLAS on a GPU
config = os.path.join(source, "tests", "lit", "Inputs", "test-tiny.toml")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# (BERTC_TEST_XDG_CACHE: the kernel cache ctest's tests share; else one in the scratch folder)
host_env = dict(os.environ, XDG_CACHE_HOME=os.environ.get("BERTC_TEST_XDG_CACHE") or os.path.join(work, "cache"))
emulated = host_env if REAL else dict(host_env, BERTC_CUDA_DRIVER=libcuda, BERTC_CUBLAS=libcublas,
                                      BERTC_EMULATED_GPU="p40", BERTC_EMULATED_GPU_MEMORY_MB="2048", BERTC_CUDA_PTX="1")
WHERE = "the GPU" if REAL else "the emulated driver"
REFERENCE = "the CPU reference" if REAL else "the Host device"


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def run(args, env, what):
    p = subprocess.run([bertc] + args, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        fail(f"{what} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stderr + p.stdout


def on_gpu(gpu):
    """The environment and flags that run `gpu`'s kernels with --device cuda: its emulation, or on a
    GPU its arch's kernels as PTX."""
    return (host_env, ["--arch", gpu]) if REAL else (dict(emulated, BERTC_EMULATED_GPU=gpu), [])


def reference(gpu):
    """What --device cuda is compared with: the Host device running the same arch's kernels, or on a
    GPU the CPU reference."""
    return ("cpu", host_env, []) if REAL else ("host", host_env, ["--arch", gpu])


def metrics_of(folder):
    """The per-step records (not fine-tuning's epoch records)."""
    return [m for m in map(json.loads, open(os.path.join(folder, "metrics.jsonl"))) if "loss" in m]


def losses_of(folder):
    return [m["loss"] for m in metrics_of(folder)]


def train(device, env, folder, extra):
    said = run(["train", config, "--device", device, "--steps", "4", "--checkpoint-dir", folder] + extra, env,
               f"train --device {device} {' '.join(extra)}")
    return said, losses_of(folder)


def edited_config(name, **keys):
    """test-tiny with [train] keys replaced, its data paths absolute."""
    text = open(config).read().replace('"../../../examples', f'"{source}/examples')
    for key, value in keys.items():
        lines = [l for l in text.splitlines() if not l.startswith(f"{key} = ")]
        text = "\n".join(lines).replace("[train]", f"[train]\n{key} = {value}", 1) + "\n"
    path = os.path.join(work, name + ".toml")
    open(path, "w").write(text)
    return path


def checks():
    # bertc check: every value of a step and an optimizer step within check's tolerances, on each GPU in
    # its arch's precision (auto): P40 fp32, V100 fp16 (mma.m8n8k4), A100 and H200 bf16 (mma.m16n8k16,
    # ldmatrix, cp.async).
    for gpu, precision in (("p40", "fp32"), ("v100", "fp16"), ("a100", "bf16"), ("h200", "bf16")):
        env, extra = on_gpu(gpu)
        said = run(["check", config, "--device", "cuda"] + extra, env, f"check on {gpu}")
        if (not REAL and "bertc's emulated driver" not in said) or f"{precision} precision" not in said or \
                " 0 beyond " not in said:
            fail(f"the check on {gpu} did not run on {WHERE} in {precision} or found values beyond its tolerance:\n{said}")
        print(f"check --device cuda, {gpu} ({precision}) on {WHERE}:",
              [l.split(" (")[0] for l in said.splitlines() if l.startswith(("step:", "optimizer:"))])


def training():
    # Each GPU's training against the same arch's kernels on the Host device (and, with --matmul
    # library, its host run of the same cuBLAS calls): P40 fp32 (also with fp16 storage, and with every
    # product in cuBLAS), V100 fp16 (loss scaling), A100 bf16 and tf32 (generated mma.m16n8k8 kernels,
    # and cuBLAS's TF32 mode), H200 bf16. The PTX NVRTC emits and the host compiler's build of the same
    # kernel sources may contract multiply-adds into FMAs differently, and the emulated cuBLAS sums in
    # float where the Host device sums in double, so a loss may differ in its last bits (4.8e-7 of 6.48
    # was seen at P40 fp32's step 1): 1e-5 relative in fp32, about 100 ulps there; where values are
    # stored in 16 bits or products take TF32 inputs, such a difference can flip one rounding (2^-11 and
    # 2^-8 relative), so 1e-3 there — far below what a wrong kernel moves. On a GPU, against the CPU
    # reference: 1e-3 (a GPU's approximate ex2 and rsqrt add their error).
    scenarios = [("p40", "fp32", "generated", 1e-5), ("p40", "fp32-fp16storage", "generated", 1e-3),
                 ("p40", "fp32", "library", 1e-5), ("v100", "fp16", "generated", 1e-3),
                 ("a100", "bf16", "generated", 1e-3), ("a100", "tf32", "generated", 1e-3),
                 ("a100", "tf32", "library", 1e-3), ("h200", "bf16", "generated", 1e-3)]
    for gpu, precision, matmul, tolerance in scenarios:
        tolerance = 1e-3 if REAL else tolerance
        extra = ["--precision", precision, "--matmul", matmul]
        name = f"{gpu}-{precision}-{matmul}"
        env, arch = on_gpu(gpu)
        said, cuda = train("cuda", env, os.path.join(work, name + "-cuda"), extra + arch)
        if "graph: recorded one device graph" not in said:
            fail(f"training {gpu} ({precision}, {matmul}) on {WHERE} recorded no CUDA Graph:\n{said}")
        if not REAL and "MFU" in said:  # (the emulator's wall clock against a GPU's peak is no GPU figure)
            fail(f"training on the emulated {gpu} printed an MFU:\n{said}")
        if matmul == "library" and "cuBLAS gemm" in said:
            fail(f"the emulated cuBLAS said something while training:\n{said}")
        device, ref_env, ref_arch = reference(gpu)
        # (the CPU reference runs no TF32: on a GPU, tf32 against fp32, whose products TF32's 10-bit
        # mantissas move by about 2^-11 relative, within the 1e-3)
        ref_extra = ["--precision", "fp32" if REAL and precision == "tf32" else precision, "--matmul", matmul]
        _, ref = train(device, ref_env, os.path.join(work, name + "-" + device), ref_extra + ref_arch)
        if len(cuda) != 4 or len(ref) != 4:
            fail(f"{name}: expected 4 losses from each run: cuda {cuda}, {device} {ref}")
        for step, (a, b) in enumerate(zip(cuda, ref), 1):
            if abs(a - b) > tolerance * abs(b):
                fail(f"{name} step {step}: loss {a} on {WHERE}, {b} on {REFERENCE}")
        apart = max(abs(a - b) / abs(b) for a, b in zip(cuda, ref))
        print(f"train --device cuda, {gpu}, {precision}, --matmul {matmul} on {WHERE} (a CUDA Graph replayed) equals "
              f"{REFERENCE} (largest relative difference {apart:.1e}):", cuda)

    if not REAL:  # (a GPU's other cuBLAS candidates would be found)
        # The library runs above went through the emulated cuBLAS: without it, the same run stops.
        p = subprocess.run([bertc, "train", config, "--device", "cuda", "--steps", "1", "--matmul", "library",
                            "--checkpoint-dir", os.path.join(work, "no-cublas")],
                           env=dict(emulated, BERTC_CUBLAS=os.path.join(work, "none.so")), capture_output=True, text=True,
                           timeout=900)
        if p.returncode == 0 or "no cuBLAS" not in p.stderr:
            fail(f"--matmul library with no cuBLAS to load: exit {p.returncode}, expected a refusal:\n{p.stderr[-2000:]}")


def features():
    # The step's CUDA Graph against the same launches issued one by one (--eager): the same kernels on
    # the same values, so the same losses, to the bit.
    env, arch = on_gpu("p40")
    _, eager = train("cuda", env, os.path.join(work, "p40-eager"), ["--eager"] + arch)
    _, graphed = train("cuda", env, os.path.join(work, "p40-graph"), arch)
    if eager != graphed:
        fail(f"the P40's losses issued eagerly {eager} differ from those of its CUDA Graph {graphed}")
    print(f"--eager, p40 on {WHERE}, gives the CUDA Graph's losses to the bit:", eager)

    # Loss scaling on a V100: a learning rate hot enough to overflow fp16 (0.3) skips step 3 and halves
    # the scale at step 4, the same trajectory, skip for skip, as the reference's.
    hot = edited_config("hot", learning_rate=0.3)
    scales = {}
    env, arch = on_gpu("v100")
    device, ref_env, ref_arch = reference("v100")
    for name, run_device, run_env, extra in (("cuda", "cuda", env, arch), ("reference", device, ref_env, ref_arch)):
        folder = os.path.join(work, f"hot-{name}")
        run(["train", hot, "--device", run_device, "--steps", "4", "--precision", "fp16", "--checkpoint-dir", folder] + extra,
            run_env, f"a hot fp16 run on {run_device}")
        scales[name] = [(m["loss_scale"], m["step_skipped"]) for m in metrics_of(folder)]
    if scales["cuda"] != scales["reference"] or sum(skipped for _, skipped in scales["cuda"]) != 1:
        fail(f"loss scaling, v100 on {WHERE} {scales['cuda']}, on {REFERENCE} {scales['reference']}: expected the same, with "
             "one step skipped")
    print(f"a skipped fp16 step, v100 on {WHERE} (scale, skipped):", scales["cuda"])

    # --batch-size auto against a GPU of 2 MiB (the emulated GPU's memory; on a GPU, --device-memory):
    # 16 sequences a step do not fit at once, so it splits them (8 x 2) and trains; without it, on the
    # emulated GPU, the run stops out of memory, naming it.
    small = dict(emulated, BERTC_EMULATED_GPU_MEMORY_MB="2")
    b16 = edited_config("b16", batch_size=16)
    said = run(["train", b16, "--device", "cuda", "--steps", "1", "--batch-size", "auto", "--checkpoint-dir",
                os.path.join(work, "auto")] + (["--device-memory", str(2 << 20), "--arch", "p40"] if REAL else []), small,
               "--batch-size auto on a 2 MiB GPU")
    if "micro-batch 8 x 2 needs" not in said or ": chosen" not in said or "step 1/1" not in said:
        fail(f"--batch-size auto did not choose 8 x 2 on a 2 MiB GPU and train:\n{said}")
    if not REAL:
        p = subprocess.run([bertc, "train", b16, "--device", "cuda", "--steps", "1", "--checkpoint-dir",
                            os.path.join(work, "oom")], env=small, capture_output=True, text=True, timeout=900)
        if p.returncode == 0 or "out of GPU memory" not in p.stderr or "--batch-size auto" not in p.stderr:
            fail(f"16 sequences on a 2 MiB GPU: exit {p.returncode}, expected out of memory naming --batch-size auto:\n"
                 f"{p.stderr}")
    print(f"--batch-size auto, 2 MiB on {WHERE}:", next(l for l in said.splitlines() if ": chosen" in l))

    # A compiled program (.bertx) with its kernels as PTX trains with no NVRTC, its losses those of
    # training from the config, bit for bit (the same kernels); on the emulated driver, one of cubins is
    # refused, naming --images ptx.
    program = os.path.join(work, "tiny.bertx")
    run(["compile", config, "--arch", "sm_61", "--images", "ptx", "-o", program], host_env, "bertc compile --images ptx")
    no_nvrtc = dict(emulated, BERTC_NVRTC=os.path.join(work, "no-nvrtc.so"))
    no_nvrtc.pop("BERTC_CUDA_PTX", None)
    data = ["--data", os.path.join(source, "examples", "data", "corpus.txt"), "--vocab",
            os.path.join(source, "examples", "data", "vocab.txt")]
    run(["train", program, "--device", "cuda", "--steps", "4", "--checkpoint-dir", os.path.join(work, "bertx")] + data,
        no_nvrtc, "train FILE.bertx --device cuda")
    from_program = losses_of(os.path.join(work, "bertx"))
    if from_program != graphed:
        fail(f"the .bertx's losses {from_program} differ from the config's {graphed} on {WHERE}")
    if not REAL:
        cubins = os.path.join(work, "cubins.bertx")
        run(["compile", config, "--arch", "sm_61", "-o", cubins], host_env, "bertc compile")
        p = subprocess.run([bertc, "train", cubins, "--device", "cuda", "--steps", "1", "--checkpoint-dir",
                            os.path.join(work, "cubins")] + data, env=no_nvrtc, capture_output=True, text=True, timeout=900)
        if p.returncode == 0 or "--images ptx" not in p.stderr:
            fail(f"a .bertx of cubins on the emulated driver: exit {p.returncode}, expected a refusal naming --images ptx:\n"
                 f"{p.stderr[-2000:]}")
    print(f"train FILE.bertx (PTX images) --device cuda on {WHERE} with no NVRTC equals the config's losses:", from_program)

    # Fine-tuning: each length bucket's program, dev evaluation without a backward, the reference's
    # losses (the Host device's for the same kernels within 1e-5; on a GPU the CPU reference's, 1e-3).
    task = os.path.join(source, "examples", "data", "task")
    tune = os.path.join(source, "tests", "lit", "Inputs", "finetune-test.toml")
    for name, lines in (("train", 41), ("dev", 13)):
        with open(os.path.join(task, f"{name}.tsv")) as f, open(os.path.join(work, f"{name}.tsv"), "w") as out:
            out.writelines(f.readlines()[:lines])
    tuned = {}
    env, arch = on_gpu("p40")
    device, ref_env, ref_arch = reference("p40")
    for name, run_device, run_env, extra in (("cuda", "cuda", env, arch), ("reference", device, ref_env, [])):
        folder = os.path.join(work, f"finetune-{name}")
        run(["finetune", tune, "--device", run_device, "--train-data", os.path.join(work, "train.tsv"), "--dev-data",
             os.path.join(work, "dev.tsv"), "--checkpoint-dir", folder] + extra, run_env, f"finetune --device {run_device}")
        tuned[name] = metrics_of(folder)
    bound = 1e-3 if REAL else 1e-5
    if len(tuned["cuda"]) != len(tuned["reference"]) or not tuned["cuda"] or any(
            abs(a["loss"] - b["loss"]) > bound * abs(b["loss"]) for a, b in zip(tuned["cuda"], tuned["reference"])):
        fail(f"finetune on {WHERE} {[m['loss'] for m in tuned['cuda']]} vs {REFERENCE} "
             f"{[m['loss'] for m in tuned['reference']]}")
    print(f"finetune --device cuda on {WHERE} equals {REFERENCE} over {len(tuned['cuda'])} records")

    # --profile: on the emulated driver, which keeps no time but counts, the step's counts on the PTX
    # emulator and the projections from them, said as such, one record a kernel launch of the step's
    # graph, and no profile JSON (which holds measured times); on a GPU, the measured table and its JSON.
    folder = os.path.join(work, "profile")
    env, arch = on_gpu("p40")
    said = run(["train", config, "--device", "cuda", "--steps", "3", "--profile", "3", "--checkpoint-dir", folder] + arch,
               env, f"--profile on {WHERE}")
    if REAL:
        if not os.path.exists(os.path.join(folder, "profile-step3.json")):
            fail(f"--profile on the GPU wrote no profile-step3.json:\n{said}")
        print("--profile on the GPU: measured, profile-step3.json written")
        return
    launched = re.search(r"profile of step 3: the emulated GPU's counts of its (\d+) kernel launches \(the device keeps no "
                         r"time: counts and projections, not measurements", said)
    graph = re.search(r"graph: recorded one device graph of \d+ nodes: (\d+) kernels", said)
    if not launched or not graph or launched.group(1) != graph.group(1) or "projected on the Tesla P40" not in said:
        fail(f"--profile on the emulated driver did not count the step graph's kernels:\n{said}")
    if os.path.exists(os.path.join(folder, "profile-step3.json")):
        fail("--profile on the emulated driver wrote a profile of measured times")
    print(f"--profile on the emulated driver: counts of the step's {launched.group(1)} launches,",
          next(l.strip() for l in said.splitlines() if "projected on the Tesla P40" in l))


# The parts, each its own ctest test in CI (they run side by side), or all of them in turn.
PARTS = {"checks": checks, "train": training, "features": features}
for part in ([PART] if PART != "all" else list(PARTS)):
    PARTS[part]()
