"""The worker's entry point: start-up (sandbox, libjq, engine) and the request loop, one query at a time (`handle`).

Everything is imported at the top: once Landlock is on, no file can be opened, module files included.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import socket
import time
from typing import Any

from .cache import CachedInput, CacheLimits, should_parse_whole
from .engine import Engine, Printer
from .libc import Mapping, trim_heap
from .libjq import LibJq
from .protocol import cache_serves, drain, encode_frame, read_request, receive_bytes
from .sandbox import MemoryCap, die_with_parent, enter_empty_directory, landlock_everything

TRIM_ABOVE_BYTES = 64 * 1024 * 1024  # give freed heap back to the OS after queries over inputs this large
MIN_HEADROOM = 32 * 1024 * 1024  # the least a query gets on top of what the worker maps, whatever the cache holds


def handle(
    engine: Engine, cap: MemoryCap, sock: socket.socket, request: dict[str, Any], fds: list[int]
) -> dict[str, Any]:
    """One query. Input comes from the cache (a hit), or from the file/bytes sent with the request: then it is
    parsed whole and cached when that is worth it (`cache.should_parse_whole`), else streamed as the CLI does.

    Memory: RLIMIT_AS = what the worker maps now - what its cache holds + the budget (+ the input's mapping), so a
    query has the same room on top of its own input as without a cache, and the worker never maps more than
    without one; the server retries once with `clear_cache` if a query runs out of memory next to cached inputs.
    """
    size = int(request["size"])
    program = str(request["program"])
    memory = int(request["memory_bytes"])
    key = str(request["key"]) if request.get("key") else None
    sent = not request.get("cached")  # the file (or bytes on the socket) came along
    cache, limits = engine.inputs, CacheLimits.from_request(request)
    freed = cache.shrink(limits)
    if request.get("clear_cache"):
        freed += cache.clear(keep=key)
    entry = cache.get(key, size) if key is not None else None
    if entry is not None and not cache_serves(program, entry.records):
        entry = None
    if size > 2**31 - 1 or entry is not None or not sent:  # nothing to read: drop what came along
        for fd in fds:
            os.close(fd)
        if sent and not fds:
            drain(sock, size)
        if size > 2**31 - 1:  # jv_parser_set_buf takes an int
            return {"ok": False, "error": "too_large", "message": "the output is over 2 GiB"}
        if entry is None:  # the server thought this worker had it: it sends the input again
            return {"ok": False, "error": "cache_miss", "message": "not cached"}
    hit = entry is not None
    fresh: CachedInput | None = None
    mapping: Mapping | None = None
    buffer: bytearray | None = None
    holder: Any = None
    try:
        if hit:
            cap.limit(max(memory - cache.cost, MIN_HEADROOM))
        else:
            cap.limit(max(memory + size - cache.cost, size + MIN_HEADROOM))
            if fds:
                try:
                    mapping = Mapping(fds[0], size)
                finally:
                    for fd in fds:
                        os.close(fd)
                address = mapping.address
            else:
                buffer = receive_bytes(sock, size)
                holder = (ctypes.c_char * size).from_buffer(buffer) if size else None
                address = ctypes.addressof(holder) if size else 0
        error = engine.compile_error(program)
        if error is not None:
            return error
        started = time.perf_counter()
        if not hit and key is not None and should_parse_whole(request, size, program, limits):
            before = engine.meter.used()
            parsed = engine.parse_all(address, size)
            if parsed is not None:
                after = engine.meter.used()
                cost = after - before if after is not None and before is not None else size * 8
                fresh = CachedInput(key, size, parsed[1], parsed[0], max(cost, size))
                if cache_serves(program, fresh.records):
                    entry = fresh
        printer = Printer(
            engine.lib,
            compact=bool(request.get("compact")),
            raw=bool(request.get("raw")),
            max_chars=int(request["max_chars"]),
        )
        if entry is not None:
            reply = engine.run_parsed(program, entry, printer)
        else:
            reply = engine.run_stream(program, address, size, printer)
        reply["jq_s"] = time.perf_counter() - started
        reply["cached"] = hit
        if fresh is not None:
            kept, fresh = fresh, None
            freed += cache.put(kept, limits)
        return reply
    except MemoryError:
        return {"ok": False, "error": "memory", "message": "out of memory"}
    finally:
        if fresh is not None:  # parsed but not kept (the query failed on the way)
            engine.lib.jv_free(fresh.value)
            freed += fresh.cost
        del holder
        if mapping is not None:
            mapping.close()
        del buffer
        cap.lift()
        if (size > TRIM_ABOVE_BYTES and not hit) or freed > TRIM_ABOVE_BYTES:
            engine.trim_due = True


def after_reply(engine: Engine) -> None:
    """What need not delay the answer: freeing a parsed input the cache did not keep, then giving the freed heap back
    to the OS (together ~1 s after a query on 100 MB of JSON, which the model no longer waits for)."""
    engine.inputs.release()
    if engine.trim_due:
        engine.trim_due = False
        trim_heap()


def main(argv: list[str]) -> int:
    """Serve requests until the server closes its end. `argv`: the libjq path, the server's pid, the socket's fd."""
    libjq_path, parent_pid, socket_fd = argv[0], int(argv[1]), int(argv[2])
    die_with_parent(parent_pid)
    os.environ.clear()  # also unsets LC_CTYPE that Python's locale coercion may have added
    enter_empty_directory()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    sock = socket.socket(fileno=socket_fd)
    sock.setblocking(True)
    try:
        lib = LibJq(libjq_path)
    except (OSError, AttributeError) as exc:
        sock.sendall(encode_frame({"ready": False, "message": f"libjq could not be loaded: {exc}"}))
        return 1
    engine = Engine(lib)
    cap = MemoryCap()
    confined = landlock_everything()
    sock.sendall(encode_frame({"ready": True, "landlock": confined, "pid": os.getpid()}))
    while True:
        try:
            received = read_request(sock)
        except (OSError, EOFError, ValueError):
            return 0
        if received is None:  # the server closed its end
            return 0
        request, fds = received
        try:
            reply = handle(engine, cap, sock, request, fds)
        except (OSError, EOFError):
            return 0
        reply["cache"] = engine.inputs.listing()
        try:
            sock.sendall(encode_frame(reply))
        except OSError:
            return 0
        after_reply(engine)
