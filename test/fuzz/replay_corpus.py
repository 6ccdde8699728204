#!/usr/bin/env python3
"""Replays the importer fuzzer's corpus through sinterc.

Every file must either compile to the training phase (exit 0) or be
rejected with exactly one `<file>:line:col: error: ...` line (exit 1):
never a crash, an abort, a hang or a second error.

Usage: replay_corpus.py SINTERC CORPUS_DIR
"""
import os
import subprocess
import sys


def main():
    sinterc, corpus = sys.argv[1], sys.argv[2]
    files = sorted(os.listdir(corpus))
    if not files:
        print(f"{corpus}: empty corpus")
        return 1
    failures = 0
    accepted = 0
    for name in files:
        path = os.path.join(corpus, name)
        try:
            run = subprocess.run(
                [sinterc, path, "--compile-to=training", "-o", os.devnull],
                capture_output=True, text=True, errors="replace", timeout=60)
        except subprocess.TimeoutExpired:
            print(f"{name}: timed out")
            failures += 1
            continue
        errors = [l for l in run.stderr.splitlines() if ": error: " in l]
        if run.returncode == 0:
            accepted += 1
        elif run.returncode != 1:
            print(f"{name}: exit {run.returncode}\n{run.stderr[-2000:]}")
            failures += 1
        elif len(errors) != 1 or not errors[0].startswith(path + ":"):
            print(f"{name}: expected one error line at the file, got:\n"
                  f"{run.stderr[-2000:]}")
            failures += 1
    print(f"{len(files)} inputs: {accepted} compiled, "
          f"{len(files) - accepted - failures} rejected with one error, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
