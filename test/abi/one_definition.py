#!/usr/bin/env python3
"""Checks that the facts of the binary interface are defined once.

The enumerations of the step program (slabs, element types, buffer
categories, argument, result and step kinds) are StepProgram.proto's; the
object's symbol names, the kernel-symbol prefixes and the buffer alignment
are abi/Abi.h's. Everything else reads them from there. This script
reads those two files and scans the C++ and TableGen sources of the compiler,
the dialects, the passes, the runtime and the tools for a second definition:

  - an enum whose enumerators are (mostly) the values of one of the ABI's
    enumerations, under whatever spelling (F32, kF32, f32);
  - a string literal that is an object symbol or a kernel-symbol prefix;
  - a string literal naming a slab, an argument kind or a result kind where
    code decides by it (compared with, looked up, assigned);
  - an alignment of 64 spelled as a number.

An enum that is a different fact with the same values (the safetensors
dtypes of runtime/Formats) says so with a comment containing
`one-definition: <why>` on one of the three lines above it.

Prints one line per finding, `file:line: what`, and exits 1 if there is any.
"""

import os
import re
import sys

SCANNED = ["compiler", "dialects", "passes", "runtime", "tools", "bench"]
ABI_DIR = "abi"
SUFFIXES = (".h", ".cpp", ".c", ".td", ".inc")


def normalize(name):
    name = name.strip()
    if re.match(r"k[A-Z]", name):
        name = name[1:]
    return name.replace("_", "").lower()


def proto_enums(text):
    """{'Slab.Kind': ['arena', ...], ...} and the oneof fields of Step."""
    enums = {}
    stack = []
    for line in text.splitlines():
        line = line.split("//")[0]
        m = re.match(r"\s*(message|enum|oneof)\s+(\w+)\s*\{", line)
        if m:
            stack.append((m.group(1), m.group(2)))
            if m.group(1) in ("enum", "oneof"):
                enums[".".join(n for _, n in stack)] = []
            continue
        if "}" in line and stack:
            stack.pop()
            continue
        if stack and stack[-1][0] == "enum":
            v = re.match(r"\s*(\w+)\s*=\s*\d+\s*;", line)
            if v:
                enums[".".join(n for _, n in stack)].append(v.group(1))
        elif stack and stack[-1][0] == "oneof":
            v = re.match(r"\s*\w+\s+(\w+)\s*=\s*\d+\s*;", line)
            if v:
                enums[".".join(n for _, n in stack)].append(v.group(1))
    return {k: v for k, v in enums.items() if v}


def abi_symbols(text):
    symbols = set(re.findall(r"#define SINTER_ABI_\w+ (\w+)\s*$", text, re.M))
    symbols |= set(re.findall(r'"(sinter_\w*)"', text))
    return symbols


def line_of(text, index):
    return text.count("\n", 0, index) + 1


def strip_comments(text):
    """Comments blanked out (newlines kept), string literals kept."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def scan(root):
    proto = open(os.path.join(root, ABI_DIR, "StepProgram.proto")).read()
    header = open(os.path.join(root, ABI_DIR, "Abi.h")).read()
    enums = proto_enums(proto)
    symbols = abi_symbols(header)
    decided = set(re.findall(r'ProgramSymbols k\w+\{\s*"(\w+)"', header))
    for key in ("Slab.Kind", "Argument.Kind", "Result.Kind",
                "MatmulStep.Activation"):
        decided |= set(enums.get(key, []))
    decided.discard("none")  # every option's default; too common to mean it
    if not enums or not symbols:
        sys.exit("one_definition.py: read no enumerations or symbols from "
                 + ABI_DIR)
    findings = []
    for top in SCANNED:
        for folder, subdirs, files in os.walk(os.path.join(root, top)):
            # Hidden folders are not ours (bench/.venv holds PyTorch).
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            rel_folder = os.path.relpath(folder, root)
            if rel_folder == ABI_DIR or rel_folder.startswith(ABI_DIR + os.sep):
                continue
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, root)
                raw = open(path, errors="replace").read()
                findings += check_file(rel, raw, enums, symbols, decided)
    return findings


def exempt(raw_lines, line):
    """Whether `line` (1-based) or one of the three above says why."""
    return "one-definition:" in "\n".join(raw_lines[max(0, line - 4):line])


def check_file(rel, raw, enums, symbols, decided):
    findings = []
    text = strip_comments(raw)
    raw_lines = raw.splitlines()
    is_cpp = not rel.endswith(".td")

    # Enumerations (C++ enums and TableGen enum cases).
    bodies = [(m.start(), m.group(1), m.group(2)) for m in re.finditer(
        r"\benum\s+(?:class\s+|struct\s+)?(\w+)\s*(?::\s*[\w:]+\s*)?\{([^}]*)\}",
        text)]
    cases = re.findall(r'EnumAttrCase<\s*"(\w+)"', text)
    if cases:
        first = re.search(r"EnumAttrCase<", text).start()
        bodies.append((first, "(TableGen enum)", ",".join(cases)))
    for start, name, body in bodies:
        values = {normalize(v.split("=")[0]) for v in body.split(",")
                  if v.strip()}
        line = line_of(text, start)
        if exempt(raw_lines, line):
            continue
        for key, abi_values in enums.items():
            want = {normalize(v) for v in abi_values}
            common = values & want
            if len(common) >= min(3, len(want)) and \
                    len(common) * 2 > len(want):
                findings.append(
                    "%s:%d: enum %s repeats %s of StepProgram.proto (%s)" %
                    (rel, line, name, key, ", ".join(sorted(common))))

    # TableGen strings are descriptions and examples.
    literals = re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text) if is_cpp else []
    for m in literals:
        literal = m.group(1)
        line = line_of(text, m.start())
        if exempt(raw_lines, line):
            continue
        if literal in symbols:
            findings.append("%s:%d: \"%s\" is an ABI symbol; use "
                            "abi/Abi.h" % (rel, line, literal))
            continue
        if literal in decided:
            before = text[max(0, m.start() - 40):m.start()]
            after = text[m.end():m.end() + 3]
            if re.search(r"(==|!=|=|\bcase|lookup\w*\(|Slab\w*\()\s*$",
                         before) or re.match(r"\s*(==|!=)", after):
                findings.append(
                    "%s:%d: \"%s\" spells an ABI name in code that decides "
                    "by it; use abi/Abi.h's names" %
                    (rel, line, literal))

    for m in re.finditer(r"\b(\w*[Aa]lign\w*)\s*(?:=|\{)\s*64\b", text):
        if exempt(raw_lines, line_of(text, m.start())):
            continue
        findings.append("%s:%d: %s is the ABI's buffer alignment; use "
                        "abi::kBufferAlignment" %
                        (rel, line_of(text, m.start()), m.group(1)))
    return findings


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: one_definition.py <source root>")
    findings = scan(sys.argv[1])
    for f in findings:
        print(f)
    if findings:
        print("%d second definition(s) of ABI facts" % len(findings))
        return 1
    print("ABI facts defined once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
