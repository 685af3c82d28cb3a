"""Minimal safetensors reader/writer in pure Python + numpy.

There is no `safetensors` package in this environment, and the format is tiny:
  [u64 little-endian N][N bytes of JSON header][raw little-endian tensor bytes]
The header maps name -> {"dtype", "shape", "data_offsets": [begin, end]} with
offsets relative to the start of the byte buffer; an optional "__metadata__"
entry holds string -> string pairs. We support the dtypes steno uses.
BF16 has no numpy dtype, so it is read/written as uint16 bit patterns and
converted to/from float32 by shifting (writer rounds to nearest even).
"""
import json
import struct

import numpy as np

_NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
       "F64": np.float64, "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}
_FROM_NP = {np.dtype(v).str: k for k, v in _NP.items()}


def f32_to_bf16_bits(a):
    """float32 array -> uint16 bf16 bit patterns, round-to-nearest-even (NaN kept quiet)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        rounded[nan] = 0x7FC0
    return rounded


def bf16_bits_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def save(path, tensors, metadata=None, dtypes=None):
    """Write {name: np.ndarray} to `path`.

    dtypes: optional {name: "BF16"} overrides; a float array listed there as BF16 is
    rounded to bf16. Otherwise the safetensors dtype follows the numpy dtype.
    Tensors are written in sorted-name order, each 8-byte aligned, like the
    reference implementation does (so mmap readers get aligned data).
    """
    dtypes = dtypes or {}
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        st = dtypes.get(name)
        if st == "BF16":
            raw = f32_to_bf16_bits(arr.astype(np.float32)).astype("<u2").tobytes()
        else:
            st = _FROM_NP.get(arr.dtype.newbyteorder("<").str)
            if st is None:
                raise ValueError(f"{name}: unsupported dtype {arr.dtype}")
            raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        pad = (-len(raw)) % 8
        header[name] = {"dtype": st, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hjson = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)  # keep the data section 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def load(path, bf16_as_f32=True):
    """Read a safetensors file -> (dict name -> np.ndarray, metadata dict, dict name -> dtype string)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for safetensors")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} exceeds file size")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out, kinds = {}, {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        raw = data[base + b: base + e]
        st = info["dtype"]
        shape = tuple(info["shape"])
        if st == "BF16":
            bits = np.frombuffer(raw, dtype="<u2")
            arr = bf16_bits_to_f32(bits) if bf16_as_f32 else bits.copy()
        elif st in _NP:
            dt = np.dtype(_NP[st]).newbyteorder("<")
            arr = np.frombuffer(raw, dtype=dt).astype(_NP[st])
        else:
            raise ValueError(f"{path}: {name}: unsupported dtype {st}")
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: {arr.size} elements for shape {shape}")
        out[name] = arr.reshape(shape)
        kinds[name] = st
    return out, meta, kinds
