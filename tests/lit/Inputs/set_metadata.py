"""Sets metadata KEY of the safetensors file FILE to VALUE (a string), refitting the metadata's own
checksum where the file has one (xxh3.__metadata__: XXH3-64 of "key=value\\n" for each other key,
sorted, through libxxhash): a record another tool edited. usage: set_metadata.py FILE KEY VALUE, or
FILE KEY @TEXTFILE for the text of TEXTFILE (less its last newline), or FILE KEY --remove to take the
key out (a record of a bertc from before the key)"""
import ctypes
import json
import struct
import sys

path, key, value = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
meta = header.setdefault("__metadata__", {})
if value.startswith("@"):
    value = open(value[1:]).read().removesuffix("\n")
if value == "--remove":
    meta.pop(key)
else:
    meta[key] = value
if "xxh3.__metadata__" in meta:
    xxh = ctypes.CDLL("libxxhash.so.0")
    xxh.XXH3_64bits.restype = ctypes.c_uint64
    xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    text = "".join(f"{k}={v}\n" for k, v in sorted(meta.items()) if not k.startswith("xxh3.")).encode()
    meta["xxh3.__metadata__"] = f"{xxh.XXH3_64bits(text, len(text)):016x}"
body = json.dumps(header, separators=(",", ":")).encode()
body += b" " * ((8 - len(body) % 8) % 8)
open(path, "wb").write(struct.pack("<Q", len(body)) + body + data[8 + n:])
