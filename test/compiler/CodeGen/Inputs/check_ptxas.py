#!/usr/bin/env python3
"""Checks ptxas's reports for the CUDA target's kernels.

    check_ptxas.py PTX_DIR DUMP_DIR CHIP...

PTX_DIR is sinterc's --cuda-ptx-dir (<chip>.ptx, <chip>.ptxas.txt), DUMP_DIR
its --dump-dir (the step programs as JSON). For every chip: each kernel a
step program launches is an entry of the PTX that ptxas compiled (its report
names it), with its launch's block size as .maxntid. Prints, per chip, the
entries, the most registers one uses and the entries that spill; exits 1 on
a missing kernel or a block size that differs.
"""
import glob
import json
import os
import re
import sys


def main():
    ptx_dir, dump_dir, chips = sys.argv[1], sys.argv[2], sys.argv[3:]
    blocks = {}
    for path in sorted(glob.glob(os.path.join(dump_dir, "*program.json"))):
        with open(path) as f:
            for k in json.load(f).get("kernels", []):
                blocks[k["symbol"]] = int(k["cuda_block"])
    ok = True
    for chip in chips:
        with open(os.path.join(ptx_dir, f"{chip}.ptxas.txt")) as f:
            report = f.read()
        with open(os.path.join(ptx_dir, f"{chip}.ptx")) as f:
            ptx = f.read()
        compiled = re.findall(r"Compiling entry function '(\w+)' for '(\w+)'",
                              report)
        names = {n for n, c in compiled if c == chip}
        maxntid = dict(re.findall(
            r"\.entry (\w+)\((?:[^)]*)\)\s*\.maxntid (\d+), 1, 1", ptx))
        for symbol, block in sorted(blocks.items()):
            if symbol not in names:
                print(f"{chip}: kernel {symbol} was not compiled by ptxas")
                ok = False
            elif int(maxntid.get(symbol, -1)) != block:
                print(f"{chip}: kernel {symbol} has .maxntid "
                      f"{maxntid.get(symbol)}, its launch {block} threads")
                ok = False
        regs = [int(r) for r in re.findall(r"Used (\d+) registers", report)]
        spills = re.findall(
            r"Function properties for (\w+)\n\s+\d+ bytes stack frame, "
            r"(\d+) bytes spill stores", report)
        spilling = sorted(n for n, s in spills if int(s) > 0 and n in names)
        print(f"{chip}: {len(blocks)} kernels launched, all compiled: "
              f"{'yes' if ok else 'no'}; most registers {max(regs)}; "
              f"spilling: {', '.join(spilling) or 'none'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
