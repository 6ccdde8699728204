#!/bin/sh
# Links StepMainProbe.cpp (a stand-in for the object `sinterc -o` writes)
# with lib/SinterRuntimeLink.txt exactly as sinterc will, then runs it:
# flags, exit codes, metrics and the outputs file.
#
# usage: StepMainTest.sh CXX REPO_ROOT LINK_FILE PYTHON WORK_DIR
set -eu
cxx=$1 root=$2 link=$3 python=$4 work=$5
build=$(dirname "$(dirname "$link")")
mkdir -p "$work"
cd "$work"
# The probe's step program, serialized as sinterc would.
protoc --encode=sinter.abi.StepProgram -I"$root" \
  "$root/abi/StepProgram.proto" \
  < "$root/test/unit/runtime/StepMainProbe.txtpb" > probe_program.bin
"$python" -c "import sys; print(','.join(str(b) for b in open(sys.argv[1], 'rb').read()))" \
  probe_program.bin > probe_program.inc
"$cxx" -std=c++17 -I. -I"$root" -I"$build" \
  -c "$root/test/unit/runtime/StepMainProbe.cpp" -o probe.o
# shellcheck disable=SC2046
"$cxx" probe.o $(cat "$link") -o probe

fail() { echo "FAIL: $*"; exit 1; }

# A bad flag: exit 2, one line.
set +e
./probe --bogus > out.txt 2> err.txt; rc=$?
set -e
[ "$rc" = 2 ] || fail "--bogus exited $rc"
grep -qx "error: unknown flag '--bogus' (try --help)" err.txt || fail "$(cat err.txt)"

# Training mode without data (the probe has no bundled dataset): exit 1.
set +e
./probe > out.txt 2> err.txt; rc=$?
set -e
[ "$rc" = 1 ] || fail "no data exited $rc"
grep -qx "error: no --data given and this binary has no bundled dataset; pass --data=FILE|DIR (docs/Data.md)" err.txt || fail "$(cat err.txt)"

# SINTER_ERROR_LOCATIONS=1 appends where the error was made and returned
# from (paths relative to the repository); any other value changes nothing.
set +e
SINTER_ERROR_LOCATIONS=1 ./probe > out.txt 2> err.txt; rc=$?
set -e
[ "$rc" = 1 ] || fail "no data with locations exited $rc"
grep -qxE "error: no --data given and this binary has no bundled dataset; pass --data=FILE\|DIR \(docs/Data.md\) \(at runtime/Train/Trainer.cpp:[0-9]+( <- runtime/Train/Trainer.cpp:[0-9]+)+\)" err.txt || fail "$(cat err.txt)"
set +e
SINTER_ERROR_LOCATIONS=1 ./probe --inputs=missing.safetensors > out.txt 2> err.txt; rc=$?
set -e
[ "$rc" = 1 ] || fail "missing file exited $rc"
grep -qxE "error: missing.safetensors: cannot open for reading: No such file or directory \(at runtime/Formats/FileIO.cpp:[0-9]+ <- runtime/Formats/SafeTensors.cpp:[0-9]+( <- runtime/[A-Za-z/]+\.cpp:[0-9]+)*\)" err.txt || fail "$(cat err.txt)"
set +e
SINTER_ERROR_LOCATIONS=0 ./probe --inputs=missing.safetensors > out.txt 2> err.txt
set -e
grep -qx "error: missing.safetensors: cannot open for reading: No such file or directory" err.txt || fail "$(cat err.txt)"

# Raw steps with a missing input: exit 1.
set +e
./probe --outputs=o.safetensors > out.txt 2> err.txt; rc=$?
set -e
[ "$rc" = 1 ] || fail "missing input exited $rc"
grep -q "^error: input 'x' is not given" err.txt || fail "$(cat err.txt)"

# x = [1,2,3,4], step starts at 10, w starts at 0.5 (its init). After three
# steps w = 0.5 + 3x = [3.5,6.5,9.5,12.5]; loss = sum(w) + 12 = 44.
"$python" - <<'PY'
import json, struct
def write(path, tensors):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
write("in.safetensors", {"x": ("F32", [4], struct.pack("<4f", 1, 2, 3, 4)),
                         "step": ("I64", [], struct.pack("<q", 10))})
PY
./probe --inputs=in.safetensors --outputs=out.safetensors --steps=3 \
  --threads=2 --profile > out.txt
grep -qx "loss = 44" out.txt || fail "$(cat out.txt)"
grep -q "outside matmuls" out.txt || fail "no profile: $(cat out.txt)"
"$python" - <<'PY'
import json, struct
b = open("out.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
s, e = h["w"]["data_offsets"]
w = struct.unpack("<4f", b[8 + n + s:8 + n + e])
assert w == (3.5, 6.5, 9.5, 12.5), w
assert h["loss"]["shape"] == [], h
PY
echo PASS
