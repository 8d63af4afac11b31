"""Checks `bertc info --json` on a GPU machine: the driver loads through dlopen, every GPU that
PyTorch sees is listed with its compute capability, some NVRTC can compile for it, and an NCCL is
found."""
import json
import subprocess
import sys

import torch

info = json.loads(subprocess.check_output([sys.argv[1], "info", "--json"]))
assert info["cuda_driver"]["found"], info["cuda_driver"]
gpus = info["gpus"]
assert len(gpus) == torch.cuda.device_count(), (gpus, torch.cuda.device_count())
for i, g in enumerate(gpus):
    major, minor = torch.cuda.get_device_capability(i)
    assert g["arch"] == f"sm_{major}{minor}", (g, major, minor)
    props = torch.cuda.get_device_properties(i)
    assert g["multiprocessors"] == props.multi_processor_count, (g, props)
    assert g["memory_bytes"] == props.total_memory, (g, props.total_memory)
    archs = [a["arch"] for a in info["compile_archs"]]
    assert g["arch"] in archs, f"no NVRTC found for {g['arch']}: {info['nvrtc']}"
    print(f"parity info: GPU {i} {g['name']} {g['arch']} {g['multiprocessors']} SMs matches torch; NVRTC "
          f"{[n.get('version') for n in info['nvrtc'] if n['found']]}")
# NCCL: PyTorch brings one (nvidia/nccl/lib in its Python folders), which bertc's search must find.
nccl = info["nccl"]
assert nccl["found"], f"bertc found no NCCL where PyTorch has {torch.cuda.nccl.version()}: tried {nccl['tried']}"
print(f"parity info: NCCL {nccl['version']} at {nccl['path']}; PyTorch's is {'.'.join(map(str, torch.cuda.nccl.version()))}")
print("PASS")
