#!/usr/bin/env python3
"""That ops.def's Gradient column, not autodiff, decides which ops have a gradient rule, and that
the compiler holds the two together: passes/autodiff.cpp compiles as it is; with a Rule op's case
taken out it does not (-Wswitch, an error there); with a Rule op marked NoGradient in a copy of
ops.def it does not (a duplicate case). Each edit is a planted bug the build must catch.

  check_gradient_rules.py CXX SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile


def compile_ok(cxx, source, include_dirs):
    """(whether `source` compiles, the compiler's messages): syntax and semantics, no object file."""
    flags = ["-std=c++20", "-fsyntax-only", "-DFMT_HEADER_ONLY=1", "-Wall"]
    flags += [f"-I{d}" for d in include_dirs]
    r = subprocess.run([cxx, *flags, source], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def main():
    cxx, root = sys.argv[1], sys.argv[2]
    autodiff = os.path.join(root, "passes", "autodiff.cpp")
    problems = []
    ok, said = compile_ok(cxx, autodiff, [root])
    if not ok:
        problems.append(f"passes/autodiff.cpp does not compile as it is:\n{said}")
    with tempfile.TemporaryDirectory() as tmp:
        # A Rule op (neg) without its case: the switch must not compile.
        text = open(autodiff).read()
        edited = re.sub(r"^\s*case OpKind::Neg:.*\n", "", text, count=1, flags=re.M)
        if edited == text:
            problems.append("passes/autodiff.cpp has no 'case OpKind::Neg:' line to take out (update this check)")
        else:
            copy = os.path.join(tmp, "autodiff_without_neg.cpp")
            open(copy, "w").write(edited)
            ok, said = compile_ok(cxx, copy, [root])
            if ok or "not handled in switch" not in said:
                problems.append("autodiff.cpp compiled without the gradient rule of neg, an op ops.def marks Rule: "
                                "the switch must have no default and -Wswitch must be an error there")
        # A Rule op (exp) marked NoGradient in a copy of the table the compiler finds first.
        table = open(os.path.join(root, "ir", "ops.def")).read()
        start = table.index("BERTC_OP(Exp,")
        traits = table.index("TRAITS(", start)
        close = table.index(")", traits)
        marked = table[:traits] + table[traits:close].replace(", Rule", ", NoGradient") + table[close:]
        if marked == table:
            problems.append("ir/ops.def's exp is not marked Rule (update this check)")
        else:
            os.makedirs(os.path.join(tmp, "ir"))
            open(os.path.join(tmp, "ir", "ops.def"), "w").write(marked)
            ok, said = compile_ok(cxx, autodiff, [tmp, root])
            if ok or "duplicate case value" not in said:
                problems.append("autodiff.cpp compiled with a rule for exp while ops.def marks it NoGradient: the "
                                "NoGradient cases must come from the table")
    for p in problems:
        print(p)
    if problems:
        return 1
    print("gradient rules: autodiff follows ops.def's Gradient column; both planted mismatches fail to compile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
