#!/usr/bin/env python3
"""No stage classifies ops in a switch of its own: what an op is (source, elementwise, in place,
cheap to recompute, its kernel family, ...) is ir/ops.def's traits column, asked through
ir/op_info.h. A `case OpKind::X:` may appear only where code does something op-specific, in the
files listed below with the reason; anywhere else it fails this test.

usage: check_op_switches.py SOURCE_ROOT
       check_op_switches.py --self-test     (a tree with a classifying switch must fail)
"""
import os
import re
import sys

# Files whose switches on op kinds are per-op behaviour, not classification.
ALLOWED = {
    "passes/autodiff.cpp": "each op's chain rule",
    "codegen/emitter.cpp": "the code of elementwise ops with no one-line kernel expression, and of loads",
    "codegen/family_row.cpp": "how the row family computes each row op",
    "ir/index_reads.cpp": "which operand of each op that reads by index holds the indices, and which dimension they index",
    "passes/memory_plan.cpp": "which byte count (params, states, inputs) a source adds to",
    "reference/executor.cpp": "dispatch to each op's eval_<Id>, generated from ops.def",
}
CASE = re.compile(r"\bcase\s+(?:ir::)?OpKind::")
FOLDERS = ["ir", "support", "ptx", "reference", "data", "passes", "distributed", "frontend", "run_config", "codegen", "runtime",
           "cuda", "devices", "train", "driver", "tools", "bench"]


def check(root):
    problems = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED:
                    continue
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        if CASE.search(line):
                            problems.append(f"{rel}:{number}: a switch on op kinds: ask the op table (ir/op_info.h) "
                                            f"instead, or list the file in {os.path.basename(__file__)} with why")
                            break
    return problems


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "passes"))
        with open(os.path.join(root, "passes", "new_pass.cpp"), "w") as f:
            f.write("bool cheap(ir::OpKind k) {\n  switch (k) {\n    case ir::OpKind::Add: return true;\n  }\n}\n")
        problems = check(root)
    if len(problems) != 1 or not problems[0].startswith("passes/new_pass.cpp:3: "):
        print(f"self-test failed: {problems}")
        return 1
    print("self-test: a classifying switch is found")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    problems = check(sys.argv[1])
    print("\n".join(problems) if problems else f"op switches: only in the {len(ALLOWED)} files allowed")
    sys.exit(1 if problems else 0)
