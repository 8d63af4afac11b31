"""Compares the tensors of two safetensors checkpoints byte for byte: prints SAME PARAMS, or
DIFFERENT PARAMS with how many tensors differ (metadata is not compared)."""
import json
import struct
import sys


def tensors(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    return {name: body[t["data_offsets"][0]:t["data_offsets"][1]]
            for name, t in header.items() if name != "__metadata__"}


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
if a.keys() != b.keys():
    sys.exit(f"different tensors: {sorted(a.keys() ^ b.keys())}")
differ = [name for name in a if a[name] != b[name]]
print("SAME PARAMS" if not differ else f"DIFFERENT PARAMS: {len(differ)} of {len(a)} tensors")
