"""A compact binary container for a dict of named numpy arrays (pure numpy, no pickle).

Layout (`encode` / `decode`)::

    b"SKCB" | version (1 byte) | codec (1 byte: 0 none, 1 zlib, 2 lzma) | body

where the body, compressed as a whole by the codec, is a little-endian uint32 header
length, a JSON header (per array: name, dtype returned by `decode`, dtype stored, shape,
encoding, byte count) and the arrays' raw bytes one after another.

Per-array dtype policy (lossless; see docs/storage.md):

* integer arrays are stored in the smallest integer dtype that holds their range; a 1-D
  array that never decreases (CSR pointers, sorted parents) is stored as its first value
  and its differences when that needs a smaller dtype ("delta");
* bool and string arrays are stored as they are;
* floating-point arrays are stored bit for bit in their own dtype: this module never
  rounds. Rounding to float32 is the caller's decision, made only where a bound covers it
  (`core.bounds.float32_rounding.spheres_float32`, derived in docs/storage.md §2).
"""
from __future__ import annotations

import json
import lzma
import struct
import zlib

import numpy as np

MAGIC = b"SKCB"
VERSION = 1
CODECS = {"none": 0, "zlib": 1, "lzma": 2}
_CODEC_NAMES = {v: k for k, v in CODECS.items()}
_INT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64)

# Unit roundoff of round-to-nearest float32 (half an ulp, relative) and the smallest
# positive subnormal float32 (absolute error bound below the normal range).


def smallest_int_dtype(lo: int, hi: int) -> np.dtype:
    """The smallest integer dtype holding every value in [lo, hi]."""
    for dt in _INT_DTYPES:
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _encode_array(a: np.ndarray) -> tuple[dict, bytes]:
    a = np.asarray(a)
    if a.dtype.hasobject:
        raise TypeError("object arrays cannot be stored")
    entry = {"dtype": a.dtype.str, "shape": list(a.shape), "enc": "raw"}
    stored = a
    if a.dtype.kind in "iu" and a.size:
        lo, hi = int(a.min()), int(a.max())
        stored = a.astype(smallest_int_dtype(lo, hi))
        if a.ndim == 1 and a.size > 1:
            d = np.diff(a.astype(np.int64))
            if d.min() >= 0:
                ddt = smallest_int_dtype(0, int(d.max()))
                if ddt.itemsize < stored.dtype.itemsize:
                    entry.update(enc="delta", first=lo)
                    stored = d.astype(ddt)
    stored = np.ascontiguousarray(stored)
    if stored.dtype.byteorder == ">":
        stored = stored.astype(stored.dtype.newbyteorder("<"))
    raw = stored.tobytes()
    entry.update(stored=stored.dtype.str, nbytes=len(raw))
    return entry, raw


def _decode_array(entry: dict, raw: bytes) -> np.ndarray:
    stored = np.frombuffer(raw, dtype=np.dtype(entry["stored"]))
    dtype = np.dtype(entry["dtype"])
    if entry["enc"] == "delta":
        out = np.empty(stored.size + 1, dtype=np.int64)
        out[0] = int(entry["first"])
        np.cumsum(stored, out=out[1:], dtype=np.int64)
        out[1:] += out[0]
        return out.astype(dtype)
    if entry["enc"] != "raw":
        raise ValueError(f"unknown array encoding {entry['enc']!r}")
    return stored.astype(dtype).reshape(entry["shape"])


def encode(arrays: dict[str, np.ndarray], codec: str = "lzma", level: int | None = None) -> bytes:
    """Pack named arrays into bytes.

    Args:
        arrays: name -> array (any shape; numeric, bool or fixed-width string dtypes).
        codec: "lzma" (smallest), "zlib" (faster) or "none".
        level: the codec's preset/level (None: lzma 0, zlib 6). lzma's preset 0 is
            measured the best trade here (`python -m bench storage`): MakeHuman at 107k
            triangles encodes 3.6x faster than preset 6 for 23% more bytes.
    Returns:
        The container bytes (see the module docstring).
    """
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}")
    entries, chunks = [], []
    for name, a in arrays.items():
        entry, raw = _encode_array(a)
        entry["name"] = str(name)
        entries.append(entry)
        chunks.append(raw)
    header = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    body = struct.pack("<I", len(header)) + header + b"".join(chunks)
    if codec == "zlib":
        body = zlib.compress(body, 6 if level is None else level)
    elif codec == "lzma":
        body = lzma.compress(body, preset=0 if level is None else level)
    return MAGIC + bytes([VERSION, CODECS[codec]]) + body


def is_blob(data: bytes) -> bool:
    """Whether `data` starts like a container written by `encode`."""
    return bytes(data[:4]) == MAGIC


def decode(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of `encode`: name -> array, each in the dtype and shape it was given.
    Raises ValueError for bytes that are not a container of this version."""
    data = bytes(data)
    if not is_blob(data) or len(data) < 6:
        raise ValueError("not a skin_collide data container")
    if data[4] != VERSION:
        raise ValueError(f"data container of version {data[4]}, expected {VERSION}")
    codec = _CODEC_NAMES.get(data[5])
    body = data[6:]
    try:
        if codec == "zlib":
            body = zlib.decompress(body)
        elif codec == "lzma":
            body = lzma.decompress(body)
        elif codec != "none":
            raise ValueError(f"unknown codec {data[5]}")
    except (zlib.error, lzma.LZMAError) as exc:
        raise ValueError(f"damaged data container ({exc})") from None
    if len(body) < 4:
        raise ValueError("damaged data container (no header)")
    (hlen,) = struct.unpack_from("<I", body, 0)
    entries = json.loads(body[4:4 + hlen].decode("utf-8"))
    out, pos = {}, 4 + hlen
    for e in entries:
        n = int(e["nbytes"])
        if pos + n > len(body):
            raise ValueError("damaged data container (truncated)")
        out[e["name"]] = _decode_array(e, body[pos:pos + n])
        pos += n
    return out
