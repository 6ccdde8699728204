"""safetensors files in numpy: the writer and reader the e2e tests and
benchmarks use to hand tensors to sinterc --run and the training binary
(the format's header is JSON; every dtype Sinter reads). Depends on numpy
only.
"""

import json
import struct

import numpy as np


_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
              "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1",
              "BOOL": "?", "U64": "<u8", "U32": "<u4", "U16": "<u2"}
_NP_TO_ST = {np.dtype("float64"): "F64", np.dtype("float32"): "F32",
             np.dtype("int64"): "I64"}


def write_safetensors(path, tensors, metadata=None):
    """Write {name: ndarray} (float64, float32 or int64) to `path`."""
    meta = {"format": "pt"}
    meta.update(metadata or {})
    arrays = {n: np.require(np.asarray(a), requirements="C")
              for n, a in tensors.items()}  # keeps 0-d tensors 0-d
    # Like the safetensors library: larger elements first, so every tensor
    # is aligned to its element size.
    order = sorted(arrays, key=lambda n: -arrays[n].dtype.itemsize)
    header = {"__metadata__": meta}
    offset = 0
    for n in order:
        a = arrays[n]
        if a.dtype not in _NP_TO_ST:
            raise ValueError(f"{n}: unsupported dtype {a.dtype}")
        header[n] = {"dtype": _NP_TO_ST[a.dtype], "shape": list(a.shape),
                     "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * (-len(hjson) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for n in order:
            f.write(arrays[n].astype(arrays[n].dtype.newbyteorder("<"),
                                     copy=False).tobytes())


def read_safetensors(path):
    """Return ({name: ndarray}, metadata). BF16 is widened to float32."""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + hlen:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        dt = info["dtype"]
        raw = body[begin:end]
        if dt == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        elif dt in _ST_DTYPES:
            arr = np.frombuffer(raw, dtype=_ST_DTYPES[dt])
        else:
            raise ValueError(f"{path}: {name}: unsupported dtype {dt}")
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: {arr.size} elements for "
                             f"shape {list(shape)}")
        tensors[name] = arr.reshape(shape).astype(arr.dtype.newbyteorder("="))
    return tensors, metadata
