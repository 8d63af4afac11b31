"""Sets field PATH of a .bertx file's JSON header to VALUE (JSON text: 2.7, 18446744073709551615,
"x"), refitting the header's length and XXH3-64 (through libxxhash): a header another tool edited,
which the checksum alone does not catch. PATH is dotted, list indices as numbers (images.0.registers).
Layout: magic (8 bytes), header length (u64), header XXH3-64 (u64), header JSON, sections.
usage: set_bertx_header.py FILE PATH VALUE"""
import ctypes
import json
import struct
import sys

path, field, value = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
data = open(path, "rb").read()
n = struct.unpack("<Q", data[8:16])[0]
header = json.loads(data[24:24 + n])
*parents, last = field.split(".")
node = header
for key in parents:
    node = node[int(key)] if isinstance(node, list) else node[key]
node[int(last) if isinstance(node, list) else last] = value
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
text = json.dumps(header, separators=(",", ":")).encode()
open(path, "wb").write(data[:8] + struct.pack("<QQ", len(text), xxh.XXH3_64bits(text, len(text))) + text +
                       data[24 + n:])
