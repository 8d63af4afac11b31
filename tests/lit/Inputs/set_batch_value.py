"""Sets element INDEX of tensor NAME in a safetensors batch file to VALUE (an integer tensor):
a hand-made bad batch. usage: set_batch_value.py FILE NAME INDEX VALUE"""
import json
import struct
import sys

path, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(path, "rb").read())
header_len = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + header_len])
entry = header[name]
formats = {"I64": "<q", "I32": "<i", "I8": "<b"}
fmt = formats[entry["dtype"]]
at = 8 + header_len + entry["data_offsets"][0] + index * struct.calcsize(fmt)
struct.pack_into(fmt, data, at, value)
open(path, "wb").write(bytes(data))
