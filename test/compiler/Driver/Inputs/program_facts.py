"""Prints facts about a training step program and its evaluation program
(docs/StepProgram.md), one per line, for FileCheck:

    program_facts.py NN-step-program.json NN-eval-step-program.json
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "e2e"))
import step_program  # noqa: E402

train = step_program.load(sys.argv[1])
ev = step_program.load(sys.argv[2])


def names(prog, kind):
    return [a["name"] for a in prog["arguments"] if a["kind"] == kind]


def kernels_with(prog, word):
    return [k["name"] for k in prog["kernels"] if word in k["name"]]


print("function", ev["function"])
print("argument kinds", sorted({a["kind"] for a in ev["arguments"]}))
print("params as in train_step", names(ev, "param") == names(train, "param"),
      len(names(ev, "param")))
print("inputs", names(ev, "input"))
print("results", [(r["name"], r["kind"]) for r in ev["results"]])
print("train_step dropout kernels", len(kernels_with(train, "dropout")) > 0)
print("eval_step dropout kernels", kernels_with(ev, "dropout"))
print("eval_step update kernels", kernels_with(ev, "update"))
print("kernel symbols", sorted({k["symbol"].rsplit("_k", 1)[0]
                                for k in ev["kernels"]}))
print("train_step hyper", [(a["name"], a["default_value"])
                           for a in train["arguments"] if a["kind"] == "hyper"])
