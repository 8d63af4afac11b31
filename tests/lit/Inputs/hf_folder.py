"""Test tooling for Hugging Face model folders, with no torch: reads and writes the safetensors
format (8-byte header length, JSON header, data) directly.

  hf_folder.py inspect DIR             architectures, tensor count, optimizer-state count, format, labels
  hf_folder.py shard SRC DST           SRC's model.safetensors as two shards + model.safetensors.index.json
  hf_folder.py set DIR KEY JSON_VALUE  sets a key of DIR/config.json
  hf_folder.py add DIR NAME            adds an F32 tensor NAME of shape [2] to DIR/model.safetensors
  hf_folder.py unprefix DIR PREFIX     takes PREFIX off the tensor names that have it (BertModel's names)
"""
import json
import os
import shutil
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
    return tensors, meta


def write(path, tensors, meta):
    header, offset, blobs = {"__metadata__": meta}, 0, []
    for name in sorted(tensors):
        dtype, shape, blob = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


cmd = sys.argv[1]
if cmd == "inspect":
    folder = sys.argv[2]
    config = json.load(open(os.path.join(folder, "config.json")))
    tensors, meta = read(os.path.join(folder, "model.safetensors"))
    state = [n for n in tensors if n.endswith((".exp_avg", ".exp_avg_sq")) or n in ("optimizer_step", "loss_scale")]
    bert = sum(n.startswith("bert.") for n in tensors)
    print(f"architectures={config['architectures']} hidden_size={config['hidden_size']} tensors={len(tensors)} "
          f"bert_prefixed={bert} optimizer_state={len(state)} format={meta.get('format')} "
          f"id2label={config.get('id2label')} problem_type={config.get('problem_type')}")
    print("files=" + ",".join(sorted(os.listdir(folder))))
elif cmd == "shard":
    src, dst = sys.argv[2], sys.argv[3]
    os.makedirs(dst)
    tensors, meta = read(os.path.join(src, "model.safetensors"))
    names = sorted(tensors)
    halves = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, half in enumerate(halves):
        file = f"model-{i + 1:05d}-of-00002.safetensors"
        write(os.path.join(dst, file), {n: tensors[n] for n in half}, meta)
        weight_map.update({n: file for n in half})
    json.dump({"metadata": {}, "weight_map": weight_map}, open(os.path.join(dst, "model.safetensors.index.json"), "w"))
    for other in ("config.json", "vocab.txt"):
        shutil.copy(os.path.join(src, other), dst)
    print(f"SHARDED: {len(names)} tensors in 2 files")
elif cmd == "set":
    path = os.path.join(sys.argv[2], "config.json")
    config = json.load(open(path))
    config[sys.argv[3]] = json.loads(sys.argv[4])
    json.dump(config, open(path, "w"))
elif cmd == "add":
    path = os.path.join(sys.argv[2], "model.safetensors")
    tensors, meta = read(path)
    tensors[sys.argv[3]] = ("F32", [2], struct.pack("<2f", 1.0, 2.0))
    write(path, tensors, meta)
elif cmd == "unprefix":
    path, prefix = os.path.join(sys.argv[2], "model.safetensors"), sys.argv[3]
    tensors, meta = read(path)
    write(path, {(n[len(prefix):] if n.startswith(prefix) else n): t for n, t in tensors.items()}, meta)
