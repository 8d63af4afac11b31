# lit configuration for bertc's IR tests: %bertc, %bertc-opt, %prenorm-bert, %bench-train and %bench-rows are
# the built tools (%examples-bin the built model programs, %bench the benchmark scripts); FileCheck, not and split-file come from LLVM 14
# through PATH.
import os
import lit.formats

config.name = "bertc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.bertc_bin_dir, "tests", "lit-out")
config.excludes = ["Inputs"]

tools = {
    "%bertc-opt": os.path.join(config.bertc_bin_dir, "tools", "bertc-opt"),
    "%bertc": os.path.join(config.bertc_bin_dir, "tools", "bertc"),
    "%prenorm-bert": os.path.join(config.bertc_bin_dir, "examples", "prenorm-bert"),
    "%examples": os.path.join(config.bertc_source_dir, "examples"),
    "%examples-bin": os.path.join(config.bertc_bin_dir, "examples"),
    "%bench-train": os.path.join(config.bertc_bin_dir, "bench", "bertc-bench-train"),
    "%bench-rows": os.path.join(config.bertc_bin_dir, "bench", "bertc-bench-rows"),
    "%bench": os.path.join(config.bertc_source_dir, "bench"),
}
# Longest first, so %bertc-opt is not read as %bertc followed by "-opt".
for name in sorted(tools, key=len, reverse=True):
    config.substitutions.append((name, tools[name]))
config.environment["PATH"] = config.llvm_bin_dir + os.pathsep + os.environ.get("PATH", "")
# Kernels compiled by the tests are cached in the build tree, not in the user's cache.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.bertc_bin_dir, "tests", "kernel-cache-lit")
# What bertc says where the CUDA driver cannot be loaded is tested only there (REQUIRES: no-gpu).
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    config.available_features.add("no-gpu")
