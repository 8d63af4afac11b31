#!/usr/bin/env python3
"""Only cuda/ talks to NVIDIA's libraries (docs/ARCHITECTURE.md): a call of the CUDA driver's,
NVRTC's, cuBLAS's or NCCL's API (cuLaunchKernel(...), nvrtcCompileProgram(...), cublasCreate(...),
ncclAllReduce(...)) or one of their library names ("libcuda.so.1", ...) in the sources of any other
folder is reported; the others reach them through runtime::Device and the device table.
cuda_emulation/ defines the driver API (bertc's emulated libcuda.so.1): it is NVIDIA's API there.

  check_vendor_calls.py SOURCE_ROOT
  check_vendor_calls.py --self-test     (planted calls must be reported)
"""
import glob
import os
import re
import sys

BACKEND = "cuda"
EMULATION = "cuda_emulation"  # (defines the API it emulates)
SKIPPED = {"tests", "bench", "examples", "build", "docs", "scripts", "cmake"}
CALL = re.compile(r"\b(?:cu[A-Z][A-Za-z0-9_]*|nvrtc[A-Z][A-Za-z0-9_]*|cublas[A-Z][A-Za-z0-9_]*|nccl[A-Z][A-Za-z0-9_]*)\(")
LIBRARY = re.compile(r'"lib(?:cuda|nvrtc|cublas|cublasLt|nccl)\b')


def problems_in(path, text):
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        for rule, what in ((CALL, "calls NVIDIA's API"), (LIBRARY, "names an NVIDIA library")):
            if rule.search(code):
                out.append(f"{path}:{number}: {what} ({code.strip()[:80]}): only {BACKEND}/ talks to NVIDIA's "
                           f"libraries; reach them through runtime::Device or the device table")
    return out


def self_test():
    assert problems_in("train/x.cpp", "api.cuLaunchKernel(f, 1, 1);") != []
    assert problems_in("driver/x.cpp", 'load("libnvrtc.so.12");') != []
    assert problems_in("train/x.cpp", "nccl_sums.issue(bucket);  // ncclAllReduce(...) in cuda/") == []
    assert problems_in("train/x.cpp", "const int cuda_count = count(x);") == []
    print("self-test: an NVIDIA API call and a library name outside cuda/ are reported; names of our own are not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    problems, files = [], 0
    for folder in sorted(os.listdir(root)):
        if folder in SKIPPED or folder in (BACKEND, EMULATION) or folder.startswith(".") or not os.path.isdir(os.path.join(root, folder)):
            continue
        for path in glob.glob(os.path.join(root, folder, "**", "*"), recursive=True):
            if path.endswith((".cpp", ".h")):
                files += 1
                problems += problems_in(os.path.relpath(path, root), open(path, errors="replace").read())
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"vendor calls: none in the {files} source files outside {BACKEND}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
