#!/usr/bin/env python3
"""The layering rule: every #include "folder/..." of a source file goes to a folder that the
file's folder may include, as the folder table of docs/ARCHITECTURE.md says (its rows
"| `folder/` | job | `allowed` `folders` |"); and every folder of the tree that holds sources is
in that table or among those the document says use any of them ("`bench/`, ... use any of
them"), so that no folder goes unchecked. Prints each wrong-way include and each folder the table
leaves out with its place and exits 1, or prints how many includes it checked and exits 0.

usage: check_includes.py SOURCE_ROOT
       check_includes.py --self-test     (a tree with a wrong-way include must fail)
"""
import os
import re
import sys
import tempfile

ROW = re.compile(r"^\|\s*`([a-z_]+)/`\s*\|.*\|\s*((?:`[a-z_]+`\s*)+)\|\s*$")
USE_ANY = re.compile(r"^((?:`[a-z_]+/`,?\s*(?:and\s*)?)+)use any of them")
SOURCE = (".h", ".cpp", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def rules(root):
    allowed, free = {}, set()
    with open(os.path.join(root, "docs", "ARCHITECTURE.md")) as doc:
        for line in doc:
            m = ROW.match(line.strip())
            if m:
                allowed[m.group(1)] = set(re.findall(r"`([a-z_]+)`", m.group(2)))
            m = USE_ANY.match(line.strip())
            if m:
                free |= set(re.findall(r"`([a-z_]+)/`", m.group(1)))
    if not allowed:
        raise SystemExit("docs/ARCHITECTURE.md has no folder table")
    return allowed, free


def unlisted_folders(root, allowed, free):
    """The top-level folders holding sources that neither the table nor the use-any line names
    (hidden folders and build folders aside: build*, or any holding CMake's CMakeCache.txt)."""
    problems = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.startswith((".", "build")) or not os.path.isdir(path) or name in allowed or name in free:
            continue
        if os.path.exists(os.path.join(path, "CMakeCache.txt")):  # (a build folder of another name)
            continue
        if any(f.endswith(SOURCE) for _, _, files in os.walk(path) for f in files):
            problems.append(f"{name}/: holds sources but has no row in docs/ARCHITECTURE.md's folder table (what it "
                            f"does, what it may include), so its includes go unchecked: add its row")
    return problems


def check(root):
    allowed, free = rules(root)
    problems, checked = unlisted_folders(root, allowed, free), 0
    for folder, may in sorted(allowed.items()):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in allowed:
                            continue
                        checked += 1
                        if m.group(1) not in may:
                            problems.append(f"{os.path.relpath(path, root)}:{number}: includes {m.group(1)}/, but "
                                            f"{folder}/ may include only {', '.join(sorted(may))} "
                                            f"(docs/ARCHITECTURE.md)")
    return problems, checked


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs", "ARCHITECTURE.md"), "w") as doc:
            doc.write("| folder | job | may include |\n| --- | --- | --- |\n"
                      "| `ir/` | the IR | `ir` |\n| `runtime/` | devices | `ir` `runtime` |\n"
                      "| `passes/` | passes | `ir` `passes` |\n\n`tests/` and `bench/` use any of them.\n")
        for folder, text in {"ir": '#include "ir/graph.h"\n',
                             "runtime": '#include "ir/graph.h"\n#include "passes/memory_plan.h"\n',
                             "tests": '#include "passes/memory_plan.h"\n',  # (free to include anything)
                             "stray": '#include "ir/graph.h"\n'}.items():  # (a folder of sources with no row)
            os.makedirs(os.path.join(root, folder))
            with open(os.path.join(root, folder, "x.cpp"), "w") as f:
                f.write(text)
        problems, checked = check(root)
    expected = ["stray/: holds sources but has no row in docs/ARCHITECTURE.md's folder table (what it does, what it "
                "may include), so its includes go unchecked: add its row",
                "runtime/x.cpp:2: includes passes/, but runtime/ may include only ir, runtime (docs/ARCHITECTURE.md)"]
    if problems != expected or checked != 3:
        print(f"self-test failed: found {problems} in {checked} includes")
        return 1
    print("self-test: a wrong-way include and a folder with no row are found")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    problems, checked = check(sys.argv[1])
    print("\n".join(problems) if problems else f"layering: {checked} includes, every one allowed")
    sys.exit(1 if problems else 0)
