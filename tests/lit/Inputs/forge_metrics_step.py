"""Sets the step of the metrics line of step OLD in FILE to NEW (written as given, e.g. 2^64-1)
and gives the line a valid checksum (XXH3-64 of the line without its "xxh3" key, through
libxxhash): a line another tool wrote. usage: forge_metrics_step.py FILE OLD NEW"""
import ctypes
import sys

path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
key = ',"xxh3":"'
lines = open(path).read().splitlines()
for i, line in enumerate(lines):
    if f'"step":{old},' in line or f'"step":{old}}}' in line:
        body = line[: line.rindex(key)].replace(f'"step":{old}', f'"step":{new}') + "}"
        digest = xxh.XXH3_64bits(body.encode(), len(body.encode()))
        lines[i] = body[:-1] + key + f"{digest:016x}" + '"}'
        break
else:
    sys.exit(f"no line of step {old} in {path}")
open(path, "w").write("\n".join(lines) + "\n")
