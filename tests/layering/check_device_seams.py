#!/usr/bin/env python3
"""train/, driver/ and tools/ ask a device what it can do (Device::capabilities(), emulator_controls()) and
the device table (devices/device_registry.h) which kinds there are; they never name a device class,
cast to one, include one's header, or look a device kind up by a name written in the code.

  check_device_seams.py SOURCE_ROOT
  check_device_seams.py --self-test     (planted violations must be reported)
"""
import os
import re
import sys

FOLDERS = ["train", "driver", "tools"]
RULES = [
    (re.compile(r"\b(?:Cuda|Host|Ptx)Device\b"), "names a device class: ask Device::capabilities() or emulator_controls()"),
    (re.compile(r'#include\s+"(?:runtime|cuda)/(?:cuda|host|ptx)_device\.h"'), "includes a device class's header"),
    (re.compile(r"dynamic_cast<[^>]*Device\b"), "casts to a device type: ask Device::capabilities()"),
    (re.compile(r'device_kind\(\s*"'), "looks a device kind up by a name in the code: walk devices::device_kinds()"),
]
# Free functions of a device's header that are not the device (the host's available memory).
ALLOWED_INCLUDES = {"runtime/host_device.h": re.compile(r"\bhost_available_bytes\b")}


def problems_in(name, text):
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for rule, why in RULES:
            if rule.search(line):
                include = re.search(r'"((?:runtime|cuda)/[a-z_]+\.h)"', line)
                if include and include.group(1) in ALLOWED_INCLUDES and ALLOWED_INCLUDES[include.group(1)].search(text):
                    continue
                out.append(f"{name}:{number}: {why}: {line.strip()}")
    return out


def self_test():
    planted = ('#include "cuda/cuda_device.h"\nauto* g = dynamic_cast<cuda::CudaDevice*>(d);\n'
               'const auto& k = devices::device_kind("cuda");\n')
    found = problems_in("planted.cpp", planted)
    assert len(found) == 4, found
    allowed = '#include "runtime/host_device.h"\nsize_t n = runtime::host_available_bytes();\n'
    assert problems_in("allowed.cpp", allowed) == [], problems_in("allowed.cpp", allowed)
    print("self-test: a device class named, included and cast to, and a kind looked up by name are all reported")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    problems, checked = [], 0
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if f.endswith((".cpp", ".h")):
                    path = os.path.join(dirpath, f)
                    problems += problems_in(os.path.relpath(path, root), open(path).read())
                    checked += 1
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"device seams: {checked} files of {' and '.join(FOLDERS)} ask capabilities, not device types or names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
