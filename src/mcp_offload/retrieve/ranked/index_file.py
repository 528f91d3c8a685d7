"""A passage index as bytes, to keep it with its output (a store sidecar) so that a restart does not rebuild it.

Layout: `MAGIC`, a 4-byte little-endian header length, the header (JSON: the format, the output's key, the passage
and shard counts, each shard's passages, tokens and database length), the passage bounds (int64 little-endian),
each shard's SQLite database image (`Connection.serialize`), then a BLAKE2b-256 digest of everything before it.

Nothing in a file is trusted before it is checked, and any doubt is `IndexFileInvalid` (the caller rebuilds): the
digest (a torn or flipped file), the format (tokenizer and passage sizes of this code), the key (this output's
handle, creation time and size), the bounds (from 0 to the output's size, increasing), the shards (their rows adding
up to the passages), each database's schema (exactly the tables this code creates, so no trigger or view rides
along) and its FTS5 row count. Loaded databases run with `trusted_schema` off.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from mcp_offload.retrieve.build_once_cache import OutputKey
from mcp_offload.retrieve.ranked.fts_index import PassageIndex, Shard, averages, index_of, new_shard_db
from mcp_offload.retrieve.ranked.passages import LONGEST, TARGET
from mcp_offload.retrieve.ranked.terms import TOKENIZER

MAGIC = b"MOPX1\n"
FORMAT = f"fts5 {TOKENIZER}; passages {TARGET}/{LONGEST}; sqlite {sqlite3.sqlite_version}"
_LENGTH = struct.Struct("<I")
_DIGEST = 32
_MAX_HEADER = 1 << 20


class IndexFileInvalid(ValueError):
    """The bytes are not a valid passage index of this output for this code."""


def max_file_bytes(size: int) -> int:
    """An upper bound for a valid file of an output of `size` bytes (an index is about half its output)."""
    return 4 * size + (16 << 20)


def dump_index(index: PassageIndex, key: OutputKey) -> Iterator[bytes]:
    """The file's bytes, in pieces (the shards' images are taken one at a time, under the index's lock)."""
    with index.lock:
        images = [shard.db.serialize() for shard in index.shards]
    header = {
        "format": FORMAT,
        "handle": key[0],
        "created": key[1],
        "size": key[2],
        "passages": index.passages,
        "shards": [[s.rows, s.tokens, len(image)] for s, image in zip(index.shards, images, strict=True)],
    }
    head = json.dumps(header).encode()
    digest = hashlib.blake2b(digest_size=_DIGEST)
    for piece in (MAGIC, _LENGTH.pack(len(head)), head, index.bounds.astype("<i8").tobytes(), *images):
        digest.update(piece)
        yield piece
    yield digest.digest()


def load_index(payload: bytes, key: OutputKey) -> PassageIndex:
    """The index a file holds, checked against `key` and this code's format; raises `IndexFileInvalid`."""
    if len(payload) < len(MAGIC) + _LENGTH.size + _DIGEST or not payload.startswith(MAGIC):
        raise IndexFileInvalid("not a passage index file")
    body = memoryview(payload)[:-_DIGEST]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != payload[-_DIGEST:]:
        raise IndexFileInvalid("digest mismatch")
    pos = len(MAGIC) + _LENGTH.size
    (length,) = _LENGTH.unpack_from(payload, len(MAGIC))
    if length > _MAX_HEADER or pos + length > len(body):
        raise IndexFileInvalid("bad header length")
    header = _header(bytes(body[pos : pos + length]), key)
    pos += length
    passages: int = header["passages"]
    end = pos + 8 * (passages + 1)
    if end > len(body):
        raise IndexFileInvalid("truncated bounds")
    bounds = np.frombuffer(body[pos:end], dtype="<i8").astype(np.int64)
    if bounds[0] != 0 or bounds[-1] != key[2] or (passages and not bool(np.all(np.diff(bounds) > 0))):
        raise IndexFileInvalid("bounds do not cut this output")
    pos = end
    shards: list[Shard] = []
    try:
        for rows, tokens, nbytes in header["shards"]:
            if pos + nbytes > len(body):
                raise IndexFileInvalid("truncated shard")
            shards.append(_shard(bytes(body[pos : pos + nbytes]), rows, tokens))
            pos += nbytes
        if sum(s.rows for s in shards) != passages or pos != len(body) or not shards:
            raise IndexFileInvalid("shards do not hold the passages")
    except BaseException:
        for shard in shards:
            shard.db.close()
        raise
    return index_of(bounds, shards)


def _header(raw: bytes, key: OutputKey) -> dict[str, Any]:
    try:
        header = json.loads(raw)
        ok = (
            isinstance(header, dict)
            and header.get("format") == FORMAT
            and (header.get("handle"), header.get("created"), header.get("size")) == key
            and type(header.get("passages")) is int
            and isinstance(header.get("shards"), list)
            and all(
                isinstance(s, list) and len(s) == 3 and all(type(v) is int and v >= 0 for v in s)
                for s in header["shards"]
            )
        )
    except ValueError:
        ok = False
    if not ok:
        raise IndexFileInvalid("header is not this output's or this format's")
    return dict(header)


def _schema(db: sqlite3.Connection) -> list[tuple[str, str, str | None]]:
    return [(str(t), str(n), s) for t, n, s in db.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY name")]


@lru_cache(maxsize=1)
def _expected_schema() -> list[tuple[str, str, str | None]]:
    """The schema `fts_index.new_shard_db` makes: a loaded database must have exactly this one."""
    db = new_shard_db()
    try:
        return _schema(db)
    finally:
        db.close()


def _shard(image: bytes, rows: int, tokens: int) -> Shard:
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA trusted_schema=OFF")
        db.deserialize(image)
        db.execute("PRAGMA trusted_schema=OFF")
        if _schema(db) != _expected_schema():
            raise IndexFileInvalid("unexpected schema")
        if averages(db) != (rows, tokens):
            raise IndexFileInvalid("row or token counts do not match")
        return Shard(db, rows, tokens)
    except sqlite3.DatabaseError as exc:
        db.close()
        raise IndexFileInvalid(f"not a valid database ({exc})") from None
    except BaseException:
        db.close()
        raise
