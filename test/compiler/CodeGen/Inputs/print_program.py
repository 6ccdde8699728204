"""Prints the step program of a lowered module (stdin) one line per item."""
import json
import re
import sys

text = sys.stdin.read()
match = re.search(r'sinter\.program = "((?:[^"\\]|\\.)*)"', text)
raw = match.group(1)
# MLIR escapes non-printable bytes and quotes as \XX (hex).
raw = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), raw)
program = json.loads(raw)
buffers = program["buffers"]
print("function", program["function"])
for step in program["steps"]:
    if step["op"] == "kernel":
        k = program["kernels"][step["kernel"]]
        print("kernel", k["name"], "extent", k["extent"])
    elif step["op"] == "matmul":
        print("matmul", "lhs", buffers[step["lhs"]]["shape"], "rhs",
              buffers[step["rhs"]]["shape"], "out", buffers[step["out"]]["shape"])
    else:
        print(step["op"])
for r in program["results"]:
    print("result", r["name"], r["kind"])
