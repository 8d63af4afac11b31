#!/usr/bin/env python3
"""The docs' pass and option tables are the registry's and options.def's, not copies kept by hand:
each block between '<!-- generated: build/tools/bertc-opt --tables ... -->' and
'<!-- end generated -->' must be one of the tables `bertc-opt --tables` prints, and each of those
tables must be in some block.

  check_generated_tables.py BERTC_OPT DOC...
  check_generated_tables.py --self-test    (a stale block and a missing table must be reported)
"""
import re
import subprocess
import sys

BLOCK = re.compile(r"<!-- generated: build/tools/bertc-opt --tables[^\n]*-->\n(.*?)<!-- end generated -->", re.S)


def problems_of(tables, docs):
    """What is wrong, given the command's tables and {doc name: its text}."""
    problems, found = [], set()
    for name, text in docs.items():
        for block in BLOCK.findall(text):
            block = block.strip("\n")
            if block in tables:
                found.add(block)
            else:
                head = block.split("\n", 1)[0]
                problems.append(f"{name}: the generated block starting '{head}' differs from what bertc-opt --tables "
                                f"prints now: paste its output there")
    for table in tables:
        if table not in found:
            problems.append(f"no doc holds the table starting '{table.splitlines()[0]}' (bertc-opt --tables): add a "
                            f"generated block")
    return problems


def tables_of(output):
    return [t.strip("\n") for t in output.split("\n\n") if t.strip()]


def self_test():
    tables = tables_of("| pass | x |\n| --- | --- |\n| `dce` | a |\n\n| key | y |\n| --- | --- |\n| `arch` | b |\n")
    begin, end = "<!-- generated: build/tools/bertc-opt --tables (test) -->\n", "<!-- end generated -->"
    good = {"doc": f"{begin}{tables[0]}\n{end}\ntext\n{begin}{tables[1]}\n{end}\n"}
    assert problems_of(tables, good) == [], problems_of(tables, good)
    stale = {"doc": f"{begin}{tables[0].replace('| a |', '| old |')}\n{end}\n{begin}{tables[1]}\n{end}\n"}
    found = problems_of(tables, stale)
    assert len(found) == 2 and "differs" in found[0] and "no doc holds" in found[1], found
    print("self-test: a stale generated block and a table no doc holds are both reported")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    output = subprocess.run([sys.argv[1], "--tables"], capture_output=True, text=True, check=True).stdout
    docs = {path: open(path).read() for path in sys.argv[2:]}
    problems = problems_of(tables_of(output), docs)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"generated tables: the {len(tables_of(output))} tables of bertc-opt --tables are in the docs as printed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
