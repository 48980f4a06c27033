"""Read and write stacklab's safetensors checkpoints with numpy and the standard library only.

Same format and checks as src/core/safetensors.cpp: u64 little-endian header length, a JSON
header padded with spaces so the data start 8-byte aligned, packed F32 data, string-only
"__metadata__". Not here: dtypes other than F32, memory mapping, the safetensors package API.

    tensors, metadata = load("runs/x/model.safetensors")
    save("out.safetensors", {"wte.weight": np.zeros((8, 4), np.float32)}, {"step": "0"})
"""
import json
import os
import struct

import numpy as np

MAX_HEADER = 100 * 1024 * 1024
METADATA_KEY = "__metadata__"


class SafetensorsError(ValueError):
    """A malformed file; the message names the file and the problem."""


def _no_duplicates(origin):
    def hook(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise SafetensorsError(f"[safetensors] {origin}: duplicate key '{key}' in the header")
            seen.add(key)
        return dict(pairs)
    return hook


def _unsigned(value, origin, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise SafetensorsError(f"[safetensors] {origin}: {what} must be a non-negative integer, got {value!r}")
    if value < 0:
        raise SafetensorsError(f"[safetensors] {origin}: {what} is negative ({value})")
    return value


def parse(data, origin="<bytes>"):
    """(dict name -> float32 ndarray, metadata dict) from the bytes of a safetensors file."""
    def bad(problem):
        raise SafetensorsError(f"[safetensors] {origin}: {problem}")

    if len(data) < 8:
        bad(f"file is {len(data)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER:
        bad(f"header length {n} is absurd (limit {MAX_HEADER} bytes); not a safetensors file?")
    if n > len(data) - 8:
        bad(f"header length {n} exceeds the {len(data) - 8} bytes after the length field (file truncated?)")
    try:
        header = json.loads(bytes(data[8:8 + n]).decode("utf-8"), object_pairs_hook=_no_duplicates(origin))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        bad(f"header is not valid JSON: {e}")
    if not isinstance(header, dict):
        bad(f"header must be a JSON object, got {type(header).__name__}")

    buf = memoryview(data)[8 + n:]
    metadata = header.pop(METADATA_KEY, {})
    if not isinstance(metadata, dict):
        bad("__metadata__ must be an object")
    for k, v in metadata.items():
        if not isinstance(v, str):
            bad(f"__metadata__ value of '{k}' must be a string, got {v!r}")

    entries = []
    for name, e in header.items():
        where = f"tensor '{name}'"
        if not isinstance(e, dict):
            bad(f"{where}: entry must be an object")
        for key in ("dtype", "shape", "data_offsets"):
            if key not in e:
                bad(f'{where}: missing "{key}"')
        if not isinstance(e["dtype"], str):
            bad(f"{where}: dtype must be a string")
        if e["dtype"] != "F32":
            bad(f"{where}: dtype {e['dtype']} is not supported (only F32)")
        if not isinstance(e["shape"], list):
            bad(f"{where}: shape must be an array")
        if len(e["shape"]) > 4:
            bad(f"{where}: shape {e['shape']} has more than 4 dimensions")
        shape = tuple(_unsigned(d, origin, f"{where}: shape entry") for d in e["shape"])
        offs = e["data_offsets"]
        if not isinstance(offs, list) or len(offs) != 2:
            bad(f"{where}: data_offsets must be [begin, end], got {offs!r}")
        begin = _unsigned(offs[0], origin, f"{where}: data_offsets begin")
        end = _unsigned(offs[1], origin, f"{where}: data_offsets end")
        if end < begin:
            bad(f"{where}: data_offsets {offs} end before they begin")
        nbytes = 4 * int(np.prod(shape, dtype=object))
        if end - begin != nbytes:
            bad(f"{where}: data_offsets {offs} span {end - begin} bytes but shape {shape} of F32 needs {nbytes}")
        entries.append((begin, end, name, shape))

    pos, prev = 0, "the start of the data"
    for begin, end, name, _ in sorted(entries):
        if end > len(buf):
            bad(f"tensor '{name}' data_offsets [{begin},{end}] lie outside the data buffer of {len(buf)} bytes")
        if begin < pos:
            bad(f"tensor '{name}' overlaps {prev}")
        if begin > pos:
            bad(f"gap of {begin - pos} bytes between {prev} and tensor '{name}'")
        pos, prev = end, f"tensor '{name}'"
    if pos != len(buf):
        bad(f"{len(buf) - pos} trailing bytes after the last tensor")

    tensors = {}
    for begin, end, name, shape in entries:
        tensors[name] = np.frombuffer(buf[begin:end], dtype="<f4").reshape(shape).astype(np.float32)
    return tensors, dict(metadata)


def load(path):
    """(dict name -> float32 ndarray, metadata dict) from a safetensors file."""
    with open(path, "rb") as f:
        return parse(f.read(), str(path))


def serialize(tensors, metadata=None):
    """The bytes of a safetensors file: tensors (name -> array, cast to float32) sorted by name."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        if not name or name == METADATA_KEY:
            raise ValueError(f"[safetensors] invalid tensor name '{name}'")
        a = np.asarray(tensors[name], dtype="<f4", order="C")  # keeps 0-d arrays 0-d
        if a.ndim > 4:
            raise ValueError(f"[safetensors] tensor '{name}' has {a.ndim} dimensions (at most 4)")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        chunks.append(a.tobytes())
        offset += a.nbytes
    if metadata:
        for k, v in metadata.items():
            if not isinstance(v, str):
                raise ValueError(f"[safetensors] metadata value of '{k}' must be a string, got {v!r}")
        header[METADATA_KEY] = dict(metadata)
    # Sorted keys, compact, raw UTF-8: byte-identical to the C++ writer for the same input.
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode("utf-8")
    text += b" " * (-len(text) % 8)  # data start 8-byte aligned
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save(path, tensors, metadata=None):
    """Writes atomically: a temp file in the same directory, fsync, rename, fsync the directory."""
    data = serialize(tensors, metadata)
    path = os.fspath(path)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


if __name__ == "__main__":  # PYTHONPATH=scripts python3 -m stacklab.runs.io_util FILE: list the tensors
    import sys
    ts, meta = load(sys.argv[1])
    for k, v in ts.items():
        print(f"{k:40s} {str(v.shape):16s} mean {v.mean() if v.size else 0:+.4g}")
    for k, v in meta.items():
        print(f"meta {k} = {v[:60]}")
