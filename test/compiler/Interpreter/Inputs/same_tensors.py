#!/usr/bin/env python3
"""same_tensors.py A.safetensors B.safetensors: the same names, dtypes,
shapes and bytes. Prints `N tensors, bitwise identical` or the first
differences, and exits 1 on any."""

import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {name: (v["dtype"], v["shape"],
                   body[v["data_offsets"][0]:v["data_offsets"][1]])
            for name, v in header.items() if name != "__metadata__"}


def main():
    a, b = read(sys.argv[1]), read(sys.argv[2])
    problems = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            problems.append("%s: only in %s" % (
                name, sys.argv[1] if name in a else sys.argv[2]))
        elif a[name][:2] != b[name][:2]:
            problems.append("%s: %s%s vs %s%s" % (name, *a[name][:2],
                                                  *b[name][:2]))
        elif a[name][2] != b[name][2]:
            problems.append("%s: the bytes differ" % name)
    for p in problems[:10]:
        print(p)
    if problems:
        print("%d of %d tensors differ" % (len(problems), len(a)))
        return 1
    print("%d tensors, bitwise identical" % len(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
