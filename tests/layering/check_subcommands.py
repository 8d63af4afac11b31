#!/usr/bin/env python3
"""The command line is thin and of one pattern (docs/ARCHITECTURE.md, "A new subcommand"): every
tools/<name>_command.cpp defines the factory <name>_command(const CommandContext&) of a Subcommand,
tools/subcommand.h declares it and tools/command_line.cpp lists it; and only tools/ (and bench/'s
programs) parse arguments: no other folder includes CLI11.

  check_subcommands.py SOURCE_ROOT
  check_subcommands.py --self-test     (planted violations must be reported)
"""
import glob
import os
import re
import sys

PARSING_ALLOWED = {"tools", "bench", "tests", "examples", "build"}
CLI_INCLUDE = re.compile(r'#include\s+<CLI/')


def pattern_problems(command_files, header_text, list_text):
    """command_files: {file name: text}. What breaks the one-pattern rule, as messages."""
    out = []
    for name, text in sorted(command_files.items()):
        stem = name[: -len("_command.cpp")]
        factory = f"{stem}_command"
        if not re.search(r"std::unique_ptr<Subcommand>\s+" + factory + r"\(const CommandContext&", text):
            out.append(f"tools/{name}: defines no {factory}(const CommandContext&) returning a Subcommand")
        if not re.search(r"\b" + factory + r"\(const CommandContext&", header_text):
            out.append(f"tools/{name}: {factory} is not declared in tools/subcommand.h")
        if not re.search(r"\b" + factory + r"\b", list_text):
            out.append(f"tools/{name}: {factory} is not in tools/command_line.cpp's list (the command is never offered)")
        if not re.search(r":\s*public Subcommand\b", text):
            out.append(f"tools/{name}: its command is not a Subcommand (tools/subcommand.h's pattern)")
    return out


def parsing_problems(files):
    """files: {path relative to the root: text}. Includes of CLI11 outside the command line."""
    return [f"{path}: includes CLI11, and only tools/ parses arguments: put the work in driver/ and its options "
            f"in tools/<name>_command.cpp"
            for path, text in sorted(files.items())
            if path.split("/")[0] not in PARSING_ALLOWED and CLI_INCLUDE.search(text)]


def self_test():
    good = ("class X final : public Subcommand {};\n"
            "std::unique_ptr<Subcommand> eval_command(const CommandContext& context) { return {}; }")
    header = "std::unique_ptr<Subcommand> eval_command(const CommandContext& context);"
    assert pattern_problems({"eval_command.cpp": good}, header, "{compile_command, eval_command}") == []
    assert len(pattern_problems({"eval_command.cpp": good}, header, "{compile_command}")) == 1  # not listed
    assert len(pattern_problems({"eval_command.cpp": good}, "", "{eval_command}")) == 1  # not declared
    assert len(pattern_problems({"eval_command.cpp": "int eval(CLI::App& app) {}"}, header, "eval_command")) == 2
    assert parsing_problems({"tools/a.cpp": "#include <CLI/CLI.hpp>", "driver/b.cpp": "#include <fmt/format.h>"}) == []
    assert len(parsing_problems({"driver/b.cpp": "#include <CLI/CLI.hpp>"})) == 1
    print("self-test: an unlisted, undeclared or other-shaped subcommand, and CLI11 in driver/, are reported")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    tools = os.path.join(root, "tools")
    commands = {os.path.basename(p): open(p).read() for p in glob.glob(os.path.join(tools, "*_command.cpp"))}
    problems = pattern_problems(commands, open(os.path.join(tools, "subcommand.h")).read(),
                                open(os.path.join(tools, "command_line.cpp")).read())
    sources = {}
    for folder in sorted(os.listdir(root)):
        if folder in PARSING_ALLOWED or folder.startswith(".") or not os.path.isdir(os.path.join(root, folder)):
            continue
        for path in glob.glob(os.path.join(root, folder, "**", "*"), recursive=True):
            if path.endswith((".cpp", ".h")):
                sources[os.path.relpath(path, root)] = open(path, errors="replace").read()
    problems += parsing_problems(sources)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"subcommands: {len(commands)} files of one pattern, each declared and listed; CLI11 only in tools/ and bench/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
