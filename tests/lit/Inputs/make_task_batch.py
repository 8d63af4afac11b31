"""Writes a hand-made sequence-classification batch (argv: OUT.safetensors WEIGHT): 2 examples of
16 tokens, labels 0 and 1, every label weight WEIGHT (nan, -1, 1): a task batch bertc batch does
not make, as a user's own eval input may be."""
import json
import struct
import sys

out, weight = sys.argv[1], float(sys.argv[2])
batch, seq = 2, 16
tensors = {
    "input_ids": ("I64", [batch, seq], [2] + [10 + i for i in range(seq - 2)] + [3] + [2] + [20 + i for i in range(seq - 2)] + [3]),
    "token_type_ids": ("I64", [batch, seq], [0] * (batch * seq)),
    "attention_mask": ("I64", [batch, seq], [1] * (batch * seq)),
    "labels": ("I64", [batch], [0, 1]),
    "label_weights": ("F32", [batch], [weight] * batch),
}
header, data = {}, b""
for name, (dtype, shape, values) in tensors.items():
    raw = struct.pack(f"<{len(values)}{'q' if dtype == 'I64' else 'f'}", *values)
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
text = json.dumps(header).encode()
open(out, "wb").write(struct.pack("<Q", len(text)) + text + data)
