#!/usr/bin/env python3
"""Tests of sinter-text2tokens, decoding its output with numpy alone.

usage: Text2TokensTest.py TOOL WORK_DIR

- chars: train.bin + val.bin decoded with meta.json give back the text
  (including non-ASCII characters); the split is floor(n * (1 - f)).
- gpt2-bytes: every byte maps to GPT-2's bytes_to_unicode token (' ' = 220,
  '\\n' = 198), and meta.json's byte_tokens agrees.
- meta.json bytes: compact JSON in a fixed member order, escapes as the
  first writer spelled them (pinned here, so a new JSON writer cannot
  change them).
- errors: one "error: ..." line, exit 1 (missing, empty, invalid UTF-8,
  unwritable output) or 2 (bad flags and usage).
Prints "N passed, M failed" and exits non-zero on any failure.
"""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np

TOOL, WORK = sys.argv[1], sys.argv[2]
passed, failed = 0, 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True)


def read_shard(path):
    header = np.fromfile(path, dtype="<i4", count=256)
    tokens = np.fromfile(path, dtype="<u2", offset=1024)
    check(header[0] == 20240520 and header[1] == 1, path + ": llm.c header")
    check(header[2] == len(tokens), path + ": token count")
    check(os.path.getsize(path) == 1024 + 2 * len(tokens), path + ": size")
    return tokens


def bytes_to_unicode_order():
    """GPT-2's encoder.py: the byte of each of the first 256 token ids."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\xa1"), ord("\xac") + 1)) +
          list(range(ord("\xae"), ord("\xff") + 1)))
    return bs + [b for b in range(256) if b not in bs]


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
text = "First Citizen:\nBefore we proceed — any further, héar me speak.\n" * 7
source = os.path.join(WORK, "input.txt")
with open(source, "w", encoding="utf-8") as f:
    f.write(text)

# chars: a round trip through meta.json.
out = os.path.join(WORK, "chars")
result = run(source, out, "--val-fraction=0.25")
check(result.returncode == 0, "chars run: " + result.stderr)
check(result.stdout.count("\n") == 1 and "train" in result.stdout,
      "one summary line: " + result.stdout)
meta = json.load(open(os.path.join(out, "meta.json"), encoding="utf-8"))
check(meta["encoding"] == "chars", "chars meta encoding")
check(meta["chars"] == "".join(sorted(set(text))), "chars in sorted order")
check(meta["vocab_size"] == len(set(text)), "chars vocab_size")
train = read_shard(os.path.join(out, "train.bin"))
val = read_shard(os.path.join(out, "val.bin"))
check(len(train) == math.floor(len(text) * 0.75), "chars split")
decoded = "".join(meta["chars"][t] for t in np.concatenate([train, val]))
check(decoded == text, "chars round trip")

# gpt2-bytes.
out = os.path.join(WORK, "gpt2")
result = run("--encoding=gpt2-bytes", source, out)
check(result.returncode == 0, "gpt2-bytes run: " + result.stderr)
meta = json.load(open(os.path.join(out, "meta.json")))
check(meta["encoding"] == "gpt2-bytes" and meta["vocab_size"] == 50257,
      "gpt2-bytes meta")
order = bytes_to_unicode_order()
byte_tokens = [0] * 256
for token, byte in enumerate(order):
    byte_tokens[byte] = token
check(meta["byte_tokens"] == byte_tokens, "byte_tokens = bytes_to_unicode")
check(byte_tokens[ord(" ")] == 220 and byte_tokens[ord("\n")] == 198,
      "' ' = 220, '\\n' = 198")
tokens = np.concatenate([read_shard(os.path.join(out, "train.bin")),
                         read_shard(os.path.join(out, "val.bin"))])
data = text.encode("utf-8")
check(len(read_shard(os.path.join(out, "train.bin"))) ==
      math.floor(len(data) * 0.9), "gpt2-bytes default split")
check(bytes(order[t] for t in tokens) == data, "gpt2-bytes round trip")
check(tokens[0] == byte_tokens[ord("F")] and 220 in tokens and 198 in tokens,
      "gpt2-bytes ids")

# meta.json bytes, as the tool has always written them: compact, members in
# a fixed order, control characters and quotes escaped, other UTF-8 raw.
pin = os.path.join(WORK, "pin.txt")
with open(pin, "wb") as f:
    f.write(b'a"b\\c\t\x01\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\n')
check(run(pin, os.path.join(WORK, "pin")).returncode == 0, "pinned chars run")
check(open(os.path.join(WORK, "pin", "meta.json"), "rb").read() ==
      b'{"encoding":"chars","vocab_size":13,"chars":"\\u0001\\t\\n\\"/'
      b'\\\\abc\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}\n',
      "chars meta.json bytes")
check(run("--encoding=gpt2-bytes", pin,
          os.path.join(WORK, "pin2")).returncode == 0, "pinned gpt2 run")
check(open(os.path.join(WORK, "pin2", "meta.json"), "rb").read() ==
      ('{"encoding":"gpt2-bytes","vocab_size":50257,"byte_tokens":[%s]}\n' %
       ",".join(map(str, byte_tokens))).encode(), "gpt2-bytes meta.json bytes")

# Errors: one line each.
def expect_error(args, code, fragment):
    result = run(*args)
    lines = result.stderr.splitlines()
    check(result.returncode == code and len(lines) == 1 and
          lines[0].startswith("error: ") and fragment in lines[0],
          "%s: rc %d, stderr %r" % (args, result.returncode, result.stderr))


empty = os.path.join(WORK, "empty.txt")
open(empty, "w").close()
latin1 = os.path.join(WORK, "latin1.txt")
with open(latin1, "wb") as f:
    f.write(b"caf\xe9\n")
expect_error([os.path.join(WORK, "missing.txt"), out], 1, "missing.txt")
expect_error([empty, out], 1, "the text is empty")
expect_error([latin1, out], 1, "byte offset 3: not valid UTF-8")
expect_error([source, os.path.join(source, "sub")], 1, "input.txt/sub")
expect_error([source, out, "--bogus"], 2, "unknown flag '--bogus'")
expect_error([source, out, "--encoding=bpe"], 2, "--encoding")
expect_error([source, out, "--val-fraction=1"], 2, "--val-fraction")
expect_error([source, out, "--val-fraction=x"], 2, "--val-fraction")
expect_error([source], 2, "expected INPUT.txt and OUTDIR")
# gpt2-bytes takes any bytes.
check(run("--encoding=gpt2-bytes", latin1,
          os.path.join(WORK, "latin1")).returncode == 0, "gpt2-bytes latin1")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
