"""The structure index of a JSON output as a sidecar file (`store.OutputSidecar`, named `SIDECAR`): so that the
first search with JSON paths in another process (another gateway or HTTP worker on the same store) or after a
restart loads the index in milliseconds instead of rebuilding it from the whole document (~1 s per 100 MB).

The file is numpy's `.npz` (uncompressed; read with `allow_pickle=False`: arrays only) of the index's arrays plus
the output's key; `load_structure` checks every shape and order the lookups rely on and raises
`StructureFileInvalid` on any doubt (the caller rebuilds)."""

from __future__ import annotations

import io
import zipfile

import numpy as np

from mcp_offload.retrieve.build_once_cache import OutputKey
from mcp_offload.retrieve.json_structure import JsonStructure

SIDECAR = "json_structure"
_ARRAYS = ("pos", "off", "records", "level_open", "level_array", "level_count", "level_member")


class StructureFileInvalid(ValueError):
    """A sidecar that is not the index of this output."""


def max_file_bytes(size: int) -> int:
    """A bound on a sane file for an output of `size` bytes (the index is ~3% of a document; deep ones more)."""
    return 64 * 1024 * 1024 + size // 2


def dump_structure(structure: JsonStructure, key: OutputKey) -> bytes:
    buffer = io.BytesIO()
    arrays = {name: getattr(structure, name) for name in _ARRAYS}
    np.savez(buffer, size=np.int64(structure.size), key=np.array([key[0], repr(key[1])]), **arrays)
    return buffer.getvalue()


def load_structure(payload: bytes, key: OutputKey) -> JsonStructure:
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            found = {name: npz[name] for name in ("size", "key", *_ARRAYS)}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise StructureFileInvalid(f"unreadable: {exc}") from None
    if [str(v) for v in found["key"].tolist()] != [key[0], repr(key[1])] or int(found["size"]) != key[2]:
        raise StructureFileInvalid("the sidecar is another output's")
    pos, off = found["pos"], found["off"]
    levels = [found[n] for n in ("level_open", "level_array", "level_count", "level_member")]
    ints = [pos, off, found["records"], levels[0], levels[2], levels[3]]
    if any(a.ndim != 1 or a.dtype != np.int64 for a in ints) or levels[1].dtype != np.bool_:
        raise StructureFileInvalid("arrays of the wrong type")
    total = int(off[-1]) if len(off) else -1
    if len(off) != len(pos) + 1 or len(found["records"]) != len(pos) or any(len(a) != total for a in levels):
        raise StructureFileInvalid("arrays of inconsistent lengths")
    if len(pos) and (int(pos[0]) < 0 or int(pos[-1]) >= key[2] or bool(np.any(np.diff(pos) <= 0))):
        raise StructureFileInvalid("checkpoints out of order or out of the document")
    if bool(np.any(np.diff(off) < 0)) or int(off[0]) != 0:
        raise StructureFileInvalid("level offsets out of order")
    if total and (int(levels[0].min()) < 0 or int(levels[0].max()) >= key[2] or int(levels[3].max()) >= key[2]):
        raise StructureFileInvalid("level positions out of the document")
    return JsonStructure(
        size=key[2],
        pos=pos,
        off=off,
        records=found["records"],
        level_open=levels[0],
        level_array=levels[1],
        level_count=levels[2],
        level_member=levels[3],
    )
