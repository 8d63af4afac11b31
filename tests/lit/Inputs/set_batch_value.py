"""Sets element INDEX of tensor NAME in a safetensors batch file to VALUE (an integer, or for a
float tensor a float: nan, -1.5): a hand-made bad batch. usage: set_batch_value.py FILE NAME INDEX VALUE"""
import json
import struct
import sys

path, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = bytearray(open(path, "rb").read())
header_len = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + header_len])
entry = header[name]
formats = {"I64": "<q", "I32": "<i", "I8": "<b", "F32": "<f"}
fmt = formats[entry["dtype"]]
value = float(value) if entry["dtype"] == "F32" else int(value)
at = 8 + header_len + entry["data_offsets"][0] + index * struct.calcsize(fmt)
struct.pack_into(fmt, data, at, value)
open(path, "wb").write(bytes(data))
