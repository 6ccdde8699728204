"""Prints the step program of a dump (the NN-step-program.json in the
folder given) one line per item."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "e2e"))
import step_program  # noqa: E402

program = step_program.load(step_program.find(sys.argv[1]))
buffers = program["buffers"]
print("function", program["function"])
for step in program["steps"]:
    if step["op"] == "kernel":
        k = program["kernels"][step["kernel"]]
        cuda = ["block", k["cuda_block"]] if "cuda_block" in k else []
        print("kernel", k["name"], "extent", k["extent"], *cuda)
    elif step["op"] == "matmul":
        print("matmul", "lhs", buffers[step["lhs"]]["shape"], "rhs",
              buffers[step["rhs"]]["shape"], "out", buffers[step["out"]]["shape"])
    else:
        print(step["op"])
for r in program["results"]:
    print("result", r["name"], r["kind"])
for a in program["arguments"]:
    if a["kind"] == "hyper":
        print("hyper", a["name"], a["default_value"])
