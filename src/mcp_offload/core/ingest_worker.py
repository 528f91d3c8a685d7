"""An ingest worker process (`python -m mcp_offload.core.ingest_worker`; started by `ingest_pool`, never by hand).

Reads its settings (one frame), loads the tokenizer, answers with an empty frame, then answers one request frame at
a time until its input closes (`ingest_wire`):

- `PREPARE`, `(notes, name, source, handle, where)`, and the output's UTF-8 bytes (encoded by the serving process,
  which writes them to the store meanwhile): where `where` names them (`(path, size, (device, inode))`: the serving
  process's in-memory file, by its `/proc` path, and its identity, checked), mapped from there, else as the next
  frame. Prepares the output, answering `(True, Prepared)` with its `data` left empty (the serving process has the
  bytes) or `(False, exception)`; when the file cannot be mapped, first `(None, reason)`, and then the bytes come as
  the next frame;
- `PARSE`, a JSON document's bytes (a big request body of the gateway, sent in its pieces as they arrived):
  `(False, reason)` when it is not JSON, else `(True, layout)` and then the value in pieces, one frame each, so that
  the serving process unpickles it a piece at a time (no piece holds its GIL for long): for an object, `layout`
  lists its keys in order, each with the number of frames of its value (-1: one frame, the whole value; n >= 0: a
  list, one frame per item); for anything else `layout` is None and one frame follows. Last, either way, the
  document's bytes, whole: reading them from the pipe, the serving process gets them in one piece without joining
  its pieces under its GIL (a 20 MB join holds it for 5-50 ms);
- `PARSE_MAPPED`, `(path, size, (device, inode))`: the same for a document the serving process wrote to an
  in-memory file, mapped from there; the same answer without the document's bytes (the serving process reads them
  back from its file), or `(None, reason)` when it cannot be mapped (the serving process then sends a `PARSE`);
- `PASSAGES`, an output's key and bytes: builds its passage index (`retrieve.ranked`, one thread), answering
  `(True, None)` and then the index file's bytes in one frame (`index_file.dump_index`), or `(False, reason)`.

stdout carries only frames: logging goes to stderr.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import pickle
import signal
import sys
from contextlib import suppress
from typing import IO

from mcp_offload.core import ingest_wire


def main() -> None:
    # Ctrl-C reaches the whole process group: the serving process shuts down and closes our input, which ends us
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    try:
        _serve(stdin, stdout)
    except (EOFError, BrokenPipeError):
        # the serving process closed our pipes (it stopped, or gave up on us while we loaded): nothing to say, and
        # no flush at exit of a pipe nobody reads
        os._exit(0)


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    from mcp_offload.core.ingest import prepare_text
    from mcp_offload.tokens import load_counter

    settings = pickle.loads(ingest_wire.receive(stdin))
    tokens = load_counter(settings.encoding)
    ingest_wire.send(stdout, b"")
    while True:
        frame = memoryview(ingest_wire.receive(stdin))
        if frame[:1] == ingest_wire.PARSE:
            _parse(frame[1:], stdout)
            del frame
            continue
        if frame[:1] == ingest_wire.PARSE_MAPPED:
            _parse_mapped(*pickle.loads(frame[1:]), stdout=stdout)
            del frame
            continue
        if frame[:1] == ingest_wire.PASSAGES:
            _passages(frame[1:], stdout)
            del frame
            continue
        notes, name, source, handle, where = pickle.loads(frame[1:])
        del frame
        data: bytes | mmap.mmap | None = None
        if where is not None:
            try:
                data = _mapped(*where)
            except (OSError, ValueError) as exc:
                ingest_wire.send(stdout, pickle.dumps((None, str(exc)), protocol=5))
        if data is None:
            data = ingest_wire.receive(stdin)
        text = ""
        try:
            text = str(data, "utf-8", "surrogatepass")  # as the serving process encoded it
            prepared = prepare_text(settings, tokens, text, name, source, handle, encoded=(data, notes))
            reply = pickle.dumps((True, dataclasses.replace(prepared, data=b"")), protocol=5)
            del prepared
        except Exception as exc:  # the caller raises it as if prepared in its own thread
            try:
                reply = pickle.dumps((False, exc), protocol=5)
            except Exception:  # an exception that does not pickle: its message, as a plain error
                reply = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), protocol=5)
        if isinstance(data, mmap.mmap):
            with suppress(BufferError):  # a view still held: unmapped once it goes
                data.close()
        del text, data
        ingest_wire.send(stdout, reply)


def _mapped(path: str, size: int, identity: tuple[int, int]) -> mmap.mmap:
    """The serving process's in-memory file at `path` (`/proc/<its pid>/fd/<fd>`), mapped read-only, without a copy;
    ValueError unless it is the file `identity` (device, inode) names."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != tuple(identity):
            raise ValueError(f"{path} is not the file the serving process shared")
        mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    if len(mapped) != size:  # mmap refuses a file shorter than `size`; this is only a check
        mapped.close()
        raise ValueError(f"the shared file holds {len(mapped):,} bytes, not {size:,}")
    return mapped


def _parse_mapped(path: str, size: int, identity: tuple[int, int], *, stdout: IO[bytes]) -> None:
    try:
        mapped = _mapped(path, size, identity)
    except (OSError, ValueError) as exc:
        ingest_wire.send(stdout, pickle.dumps((None, str(exc)), protocol=5))
        return
    try:
        with memoryview(mapped) as document:
            _parse(document, stdout, send_back=False)
    finally:
        mapped.close()


def _parse(document: memoryview, stdout: IO[bytes], *, send_back: bool = True) -> None:
    import orjson

    from mcp_offload.errors import reason_of

    try:
        value = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        ingest_wire.send(stdout, pickle.dumps((False, reason_of(exc)), protocol=5))
    else:
        if isinstance(value, dict):
            layout: list[tuple[str, int]] | None = [
                (key, len(item) if isinstance(item, list) else -1) for key, item in value.items()
            ]
            pieces = [piece for item in value.values() for piece in (item if isinstance(item, list) else (item,))]
        else:
            layout, pieces = None, [value]
        del value
        ingest_wire.send(stdout, pickle.dumps((True, layout), protocol=5))
        for piece in pieces:
            ingest_wire.send(stdout, pickle.dumps(piece, protocol=5))
    if send_back:
        ingest_wire.send(stdout, document)


def _passages(request: memoryview, stdout: IO[bytes]) -> None:
    from mcp_offload.retrieve.ranked.fts_index import build_index
    from mcp_offload.retrieve.ranked.index_file import dump_index

    length = int.from_bytes(request[:8], "big")
    key = pickle.loads(request[8 : 8 + length])
    try:
        index = build_index(request[8 + length :], builders=1)
        try:
            payload = b"".join(dump_index(index, key))
        finally:
            index.close()
    except Exception as exc:  # e.g. MemoryError: the serving process builds it in its thread instead
        ingest_wire.send(stdout, pickle.dumps((False, f"{type(exc).__name__}: {exc}"), protocol=5))
        return
    ingest_wire.send(stdout, pickle.dumps((True, None), protocol=5))
    ingest_wire.send(stdout, payload)


if __name__ == "__main__":
    main()
