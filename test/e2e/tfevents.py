#!/usr/bin/env python3
"""Reads TensorBoard event files with nothing but the standard library, as
an independent check of the binary's `--tensorboard` writer (which uses
protobuf and ISA-L): the TFRecord framing with both masked CRC-32Cs
checked, and the few Event fields a run writes, decoded from the protobuf
wire format by hand (field numbers from TensorBoard's event.proto and
summary.proto).

  python3 tfevents.py DIR     prints every record of DIR's event files

As a module: `events(path)` lists one file's events; `series(dir)` gives
{tag: [(step, value), ...]} over a folder's files read in name order,
dropping what a SessionLog START at step S supersedes (records of steps
>= S read before it), as TensorBoard's reader does; `scalars(dir)` the
same as {tag: {step: value}}, an error where a step has two values.
"""

import glob
import os
import struct
import sys


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# The standard check value of CRC-32C.
assert crc32c(b"123456789") == 0xE3069283


class BadFile(Exception):
    pass


def records(path):
    raw = open(path, "rb").read()
    at = 0
    while at < len(raw):
        if len(raw) - at < 12:
            raise BadFile(f"{path}: {len(raw) - at} bytes of a record header "
                          f"at offset {at}")
        head = raw[at:at + 8]
        (n,) = struct.unpack("<Q", head)
        (crc,) = struct.unpack("<I", raw[at + 8:at + 12])
        if crc != masked(head):
            raise BadFile(f"{path}: bad length CRC at offset {at}")
        data = raw[at + 12:at + 12 + n]
        if len(data) != n or len(raw) < at + 16 + n:
            raise BadFile(f"{path}: record at offset {at} is cut short")
        (crc,) = struct.unpack("<I", raw[at + 12 + n:at + 16 + n])
        if crc != masked(data):
            raise BadFile(f"{path}: bad data CRC at offset {at}")
        yield data
        at += 16 + n


def _fields(buf):
    """(field number, wire type, value) of one message's wire bytes."""
    at = 0

    def varint():
        nonlocal at
        shift = value = 0
        while True:
            b = buf[at]
            at += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while at < len(buf):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            yield number, wire, buf[at:at + 8]
            at += 8
        elif wire == 2:
            n = varint()
            yield number, wire, buf[at:at + n]
            at += n
        elif wire == 5:
            yield number, wire, buf[at:at + 4]
            at += 4
        else:
            raise BadFile(f"wire type {wire} in an Event")


def decode(data):
    event = {"wall_time": 0.0, "step": 0}
    for number, wire, v in _fields(data):
        if number == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", v)[0]
        elif number == 2 and wire == 0:
            event["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif number == 3 and wire == 2:
            event["file_version"] = v.decode()
        elif number == 5 and wire == 2:
            values = {}
            for vn, vw, value in _fields(v):
                if vn != 1 or vw != 2:
                    continue
                tag, simple = None, None
                for fn, fw, fv in _fields(value):
                    if fn == 1 and fw == 2:
                        tag = fv.decode()
                    elif fn == 2 and fw == 5:
                        simple = struct.unpack("<f", fv)[0]
                values[tag] = simple
            event["summary"] = values
        elif number == 7 and wire == 2:
            status = 0
            for fn, fw, fv in _fields(v):
                if fn == 1 and fw == 0:
                    status = fv
            event["session_log"] = {1: "START", 2: "STOP",
                                    3: "CHECKPOINT"}.get(status, status)
        else:
            event.setdefault("other", []).append(number)
    return event


def files(directory):
    return sorted(glob.glob(os.path.join(directory, "*tfevents*")))


def events(path):
    return [decode(d) for d in records(path)]


def series(directory, purge=True):
    """{tag: [(step, value), ...]} in the order read."""
    out = {}
    for path in files(directory):
        for e in events(path):
            if purge and e.get("session_log") == "START":
                for tag in out:
                    out[tag] = [(s, v) for s, v in out[tag] if s < e["step"]]
            for tag, value in e.get("summary", {}).items():
                out.setdefault(tag, []).append((e["step"], value))
    return out


def scalars(directory, purge=True):
    """{tag: {step: value}}, failing where a step holds two values."""
    out = {}
    for tag, pairs in series(directory, purge).items():
        steps = [s for s, _ in pairs]
        twice = sorted({s for s in steps if steps.count(s) > 1})
        if twice:
            raise BadFile(f"{directory}: {tag} has steps {twice} twice")
        out[tag] = dict(pairs)
    return out


def main():
    for path in files(sys.argv[1]):
        print(path)
        for e in events(path):
            print(" ", e)


if __name__ == "__main__":
    main()
