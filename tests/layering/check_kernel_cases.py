#!/usr/bin/env python3
"""Every op of ir/ops.def that runs in a kernel (any pattern but Source, View and Effect) has a
kernel test case: it appears in a graph of tests/kernels/, as IR text (`= name(`) or built in C++
(`OpKind::Id`), where the kernels are checked against the reference executor.

  check_kernel_cases.py SOURCE_ROOT
  check_kernel_cases.py --self-test     (a planted gap: an op no case names must be reported)
"""
import glob
import os
import re
import sys

NO_KERNEL = {"Source", "View", "Effect"}


def ops_with_kernels(table_text):
    """(Id, IR name) of every op whose pattern puts it in a kernel, from the text of ops.def."""
    out = []
    for block in re.split(r"(?m)^(?=BERTC_OP\()", table_text)[1:]:
        head = re.match(r"BERTC_OP\((\w+),\s*(\w+),", block)
        traits = re.search(r"TRAITS\((\w+),", block)
        if not head or not traits:
            raise SystemExit(f"ops.def: cannot read the entry starting {block[:60]!r}")
        if traits.group(1) not in NO_KERNEL:
            out.append(head.groups())
    return out


def missing_cases(ops, test_text):
    return [name for op_id, name in ops
            if not re.search(r"=\s*" + re.escape(name) + r"\(", test_text)
            and not re.search(r"OpKind::" + op_id + r"\b", test_text)]


def kernel_test_text(root):
    files = sorted(glob.glob(os.path.join(root, "tests", "kernels", "**", "*.cpp"), recursive=True) +
                   glob.glob(os.path.join(root, "tests", "kernels", "**", "*.ir"), recursive=True))
    return "\n".join(open(f).read() for f in files)


def self_test():
    table = """BERTC_OP(Neg, neg, UnaryFloat, Inferred, "x", 1, ,
         TRAITS(Elementwise, Pointwise, InPlace | Recompute, Rule), "-{0}", "doc")
BERTC_OP(Input, input, Source, Declared, "", 0, ,
         TRAITS(Source, None, NoFlags, NoGradient), "", "doc")
BERTC_OP(Lamb, lamb, Lamb, Inferred, "p", 0, ,
         TRAITS(Optimizer, MultiTensorNorm, NoFlags, NoGradient), "", "doc")
"""
    ops = ops_with_kernels(table)
    assert ops == [("Neg", "neg"), ("Lamb", "lamb")], ops
    assert missing_cases(ops, "  %1 = neg(%0) : f32[2]\n expect(ir::OpKind::Lamb);") == []
    assert missing_cases(ops, "  %1 = negate(%0) : f32[2]") == ["neg", "lamb"]
    assert missing_cases(ops, "  %1 = neg(%0) : f32[2]\n expect(ir::OpKind::LambGrad);") == ["lamb"]
    print("self-test: an op without a kernel case is reported; IR text and OpKind:: both count")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    ops = ops_with_kernels(open(os.path.join(root, "ir", "ops.def")).read())
    missing = missing_cases(ops, kernel_test_text(root))
    for name in missing:
        print(f"{name}: runs in a kernel (ir/ops.def) and no graph in tests/kernels/ has it: add a case "
              f"(tests/kernels/kernel_families_test.cpp, checked against the reference)")
    if missing:
        return 1
    print(f"kernel cases: each of the {len(ops)} ops that run in kernels is in a kernel test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
