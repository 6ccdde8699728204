"""Reads the step programs sinterc dumps (NN-step-program.json,
NN-eval-step-program.json; docs/StepProgram.md) into plain Python values.

The dump is the JSON form of abi/StepProgram.proto: int64 values
are strings, a step is an object with one op key ({"kernel": {...}}) and
its "origins" (the model ops it computes), a constant's bytes are base64.
load() returns the same fields with ints as ints, each step as a dict with
an "op" key ("kernel", "matmul", "copy"), its fields and "origins", constants' bytes as bytes, and optional fields present only when
set. It also reads the format's first version (a JSON object with
"version": 1, written by sinterc before StepProgram.proto), mapping its
names to the schema's, so that recorded dumps stay readable.
"""

import base64
import json
import os
import re

INT_FIELDS = {"version", "seed", "bytes", "id", "offset", "buffer", "bound",
              "ignore", "extent", "kernel", "lhs", "rhs", "out", "bias", "src",
              "dst", "view_of", "line", "column"}


def _ints(value, key=None):
    if isinstance(value, dict):
        return {k: _ints(v, k) for k, v in value.items()}
    if isinstance(value, list):
        if key == "shape":
            return [int(d) for d in value]
        return [_ints(v) for v in value]
    if key in INT_FIELDS and isinstance(value, str):
        return int(value)
    return value


def _from_version1(old):
    new = {"version": 1, "function": old["function"],
           "seed": old.get("seed", 0), "slabs": dict(old["slabs"])}
    new["buffers"] = [dict(b) for b in old["buffers"]]
    args = []
    for a in old["arguments"]:
        x = {k: v for k, v in a.items() if k not in ("init", "default")}
        if "init" in a and a["init"]:
            i = dict(a["init"])
            if "std" in i:
                i["stddev"] = i.pop("std")
            x["init"] = i
        if "default" in a:
            x["default_value"] = a["default"]
        args.append(x)
    new["arguments"] = args
    new["results"] = [dict(r) for r in old["results"]]
    new["constants"] = [{"buffer": c["buffer"], "data": bytes.fromhex(c["hex"])}
                        for c in old["constants"]]
    new["kernels"] = [dict(k) for k in old["kernels"]]
    new["steps"] = [dict(s) for s in old["steps"]]
    return new


def parse(text):
    prog = json.loads(text)
    if int(prog.get("version", 1)) == 1:
        return _from_version1(prog)
    prog = _ints(prog)
    prog["slabs"] = {s["slab"]: s["bytes"] for s in prog["slabs"]}
    for a in prog["arguments"]:
        if a.get("kind") != "param":
            a.pop("init", None)
    for c in prog["constants"]:
        c["data"] = base64.b64decode(c.get("data", ""))
    steps = []
    for s in prog["steps"]:
        origins = s.get("origins", [])
        (op, body), = [(k, v) for k, v in s.items() if k != "origins"]
        if op == "kernel":
            for key in ("inputs", "outputs"):
                body[key] = [int(b) for b in body.get(key, [])]
        steps.append(dict(body, op=op, origins=origins))
    prog["steps"] = steps
    return prog


def load(path):
    with open(path) as f:
        return parse(f.read())


def find(dump_dir, prefix=""):
    """NN-step-program.json (the training step's) in a dump, or with
    prefix "eval-" NN-eval-step-program.json; None if there is none."""
    pattern = re.compile(r"\d+-" + re.escape(prefix) + r"step-program\.json")
    for f in sorted(os.listdir(dump_dir)):
        if pattern.fullmatch(f):
            return os.path.join(dump_dir, f)
    return None
