"""The jq worker process: runs one jq program at a time over one stored output, inside a sandbox.

Why a separate process: jq is Turing-complete, so a program may loop forever, print forever or allocate until the
machine swaps. A process can be killed at a deadline and capped with `RLIMIT_AS`; a thread cannot. `query.JqRunner`
starts this file as a script (`python -I -S jq_worker.py <libjq> <parent pid> <fd>`) with an empty environment,
/dev/null on stdin/stdout/stderr (stdout is the MCP wire in the server: nothing of ours may reach it) and one end
of a UNIX socket pair. It is stdlib-only and never imports the server package, so it starts in a few milliseconds.

Why libjq through ctypes instead of jq.py's Python API: jq.py (the PyPI `jq` package) bundles libjq (1.8.2 in
jq 1.13) and exports its C API from its extension module. Driving that API the way jq's own `main.c` does gives
the CLI's exact semantics, which jq.py's iterator does not offer: `input`/`inputs` read the following values of a
JSON Lines output, results are printed by jq's own printer (`jv_dump_string` with the CLI's flags, so `-c`, `-r`
and the 2-space pretty form are byte-identical to `jq` 1.8.2), `halt`/`halt_error` behave as in the CLI, and we
can set an empty library search path. The input is never copied: the stored file's descriptor arrives over the
socket (`SCM_RIGHTS`) and is mmapped; bytes from a non-file store arrive on the socket.

Parsed inputs are cached: parsing is most of a query's cost (libjq 1.8 parses ~15-20 MB/s) and models run several
queries in a row on one output while refining a filter. The server names each input by a key (handle, size,
creation time, kind: stored outputs never change) and the worker keeps the parsed values of its last few inputs
(`InputCache`, LRU, bounded by count, source bytes and heap bytes). A run gets its own reference (`jv_copy`) and
jq values are copy-on-write, so a program that "modifies" its input (`.a = 1`) copies what it changes and the
cached value stays as parsed. The cache counts against the memory cap: a query gets the same total budget with
or without it (see `handle`), and the server retries once without the cache when a query runs out of memory.
Programs that read the input stream themselves (`input`, `inputs`, `input_line_number`, `input_filename`) run on
the stream as before, except over a single-value input, where the stream has nothing left to give anyway.

Sandbox, in layers:
- files: `query.check_program` rejects import/include (the only way a program names a file); Landlock (Linux >=
  5.13, best effort) then forbids opening any file at all after start-up, so even a missed directive reads nothing;
  no input file names (`input_filename` is null), JQ_LIBRARY_PATH=[] (`modulemeta` finds nothing), and the cwd is
  a directory deleted right after `chdir`;
- environment: empty (`$ENV`/`env` are `{}`);
- resources: RLIMIT_AS per request (memory cap), RLIMIT_CORE=0, RLIMIT_FSIZE=0; the server enforces the deadline;
- lifetime: PR_SET_PDEATHSIG and a getppid watchdog, so a worker never outlives the server; EOF ends it when idle.

Wire protocol (both directions): 4-byte big-endian length + a JSON object. A request may carry one descriptor
(the stored file) or be followed by `size` raw bytes, or neither when it says `cached` (the server knows the
worker holds that input: every reply lists the cache); a reply is one frame.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FRAME = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024  # requests are small (program + options); replies are bounded by the output cap
WATCHDOG_INTERVAL_S = 0.5
CACHED_PROGRAMS = 24  # compiled (program, variant) pairs
TRIM_ABOVE_BYTES = 64 * 1024 * 1024  # give freed heap back to the OS after queries over inputs this large
# Parsed jv values take 5-13x their JSON text on libjq 1.8 (measured: objects ~12x, integer arrays ~10x, floats
# ~5x). JSON Lines are parsed whole for the cache only when this estimate fits the cache: streaming them needs
# one record in memory, and a program cut short by the output cap reads only the first records.
PARSED_BYTES_PER_SOURCE_BYTE = 16
MIN_HEADROOM = 32 * 1024 * 1024  # the least a query gets on top of what the worker maps, whatever the cache holds

# jv kinds and printer flags, from jv.h
KIND_INVALID, KIND_NULL, KIND_FALSE, KIND_TRUE, KIND_NUMBER, KIND_STRING, KIND_ARRAY, KIND_OBJECT = range(8)
PRINT_PRETTY_INDENT_2 = (2 << 8) | 1  # JV_PRINT_INDENT_FLAGS(2): the CLI default
PRINT_COMPACT = 0  # `jq -c`

# The CLI runs the program once per input; `input`/`inputs` inside it take the following inputs. Letting jq do that
# loop itself (instead of one ctypes round trip per input) is the same semantics and keeps JSON Lines fast.
_LOOP_PREFIX = "def _mcp_offload_run: ("
_LOOP_SUFFIX = "\n); _mcp_offload_run, (inputs | _mcp_offload_run)"
# The same loop over cached values: the array of every input, each one run in order.
_EACH_SUFFIX = "\n); .[] | _mcp_offload_run"
_WRAPPERS = {"looped": (_LOOP_PREFIX, _LOOP_SUFFIX), "each": (_LOOP_PREFIX, _EACH_SUFFIX)}


def cache_serves(program: str, records: int) -> bool:
    """Whether cached values can stand in for the input stream of `program` (shared with the server).

    Only `input`, `inputs`, `input_line_number` and `input_filename` reach jq's input callback. A cached run has no
    callback, and then `input` fails with "break" and `inputs` is empty: what they do after the last value, so a
    single-value input is served to them too (the line number and file name builtins insist on the stream). The
    test is lexical and errs one way: the word anywhere, even in a string, sends the program to the stream.
    """
    if "input" not in program:
        return True
    return records == 1 and "input_" not in program


# -- wire protocol -------------------------------------------------------------------------------------------------
def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return FRAME.pack(len(body)) + body


def decode_frame(body: bytes) -> dict[str, Any]:
    message = json.loads(body.decode("utf-8", "surrogatepass"))
    if not isinstance(message, dict):
        raise ValueError("a frame must hold a JSON object")
    return message


def _recv_exact(sock: socket.socket, size: int, fds: list[int]) -> bytes | None:
    """Read exactly `size` bytes (collecting any passed descriptors); None on a clean EOF before the first byte."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        data, new_fds, _flags, _addr = socket.recv_fds(sock, size - got, 4)
        fds.extend(new_fds)
        if not data:
            if got == 0:
                return None
            raise EOFError("the server closed the socket mid-frame")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def read_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    fds: list[int] = []
    head = _recv_exact(sock, FRAME.size, fds)
    if head is None:
        return None
    (length,) = FRAME.unpack(head)
    if length > MAX_FRAME:
        raise ValueError("request frame too large")
    body = _recv_exact(sock, length, fds)
    if body is None:
        raise EOFError("the server closed the socket mid-frame")
    return decode_frame(body), fds


# -- libjq binding -------------------------------------------------------------------------------------------------
class _JvUnion(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_void_p), ("number", ctypes.c_double)]


class Jv(ctypes.Structure):
    """`jv` from jv.h: a 16-byte value passed by value everywhere in libjq's API."""

    _fields_ = [
        ("kind_flags", ctypes.c_ubyte),
        ("pad_", ctypes.c_ubyte),
        ("offset", ctypes.c_ushort),
        ("size", ctypes.c_int),
        ("u", _JvUnion),
    ]


_ErrorCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, Jv)


class LibJq:
    """The handful of libjq functions the CLI's main loop uses, typed for ctypes."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        vp, i, jv = ctypes.c_void_p, ctypes.c_int, Jv

        def fn(name: str, restype: Any, *argtypes: Any) -> Any:
            func = getattr(lib, name)
            func.restype = restype
            func.argtypes = list(argtypes)
            return func

        self.jq_init = fn("jq_init", vp)
        self.jq_teardown = fn("jq_teardown", None, ctypes.POINTER(vp))
        self.jq_set_error_cb = fn("jq_set_error_cb", None, vp, vp, vp)
        self.jq_set_attr = fn("jq_set_attr", None, vp, jv, jv)
        self.jq_compile_args = fn("jq_compile_args", i, vp, ctypes.c_char_p, jv)
        self.jq_start = fn("jq_start", None, vp, jv, i)
        self.jq_next = fn("jq_next", jv, vp)
        self.jq_halted = fn("jq_halted", i, vp)
        self.jq_get_exit_code = fn("jq_get_exit_code", jv, vp)
        self.jq_get_error_message = fn("jq_get_error_message", jv, vp)
        self.jq_set_input_cb = fn("jq_set_input_cb", None, vp, vp, vp)
        self.input_init = fn("jq_util_input_init", vp, vp, vp)
        self.input_set_parser = fn("jq_util_input_set_parser", None, vp, vp, i)
        self.input_next = fn("jq_util_input_next_input", jv, vp)
        self.input_free = fn("jq_util_input_free", None, ctypes.POINTER(vp))
        self.input_next_cb = ctypes.cast(lib.jq_util_input_next_input_cb, vp)
        self.jv_parser_new = fn("jv_parser_new", vp, i)
        self.jv_parser_set_buf = fn("jv_parser_set_buf", None, vp, vp, i, i)
        self.jv_get_kind = fn("jv_get_kind", i, jv)
        self.jv_copy = fn("jv_copy", jv, jv)
        self.jv_free = fn("jv_free", None, jv)
        self.jv_invalid_has_msg = fn("jv_invalid_has_msg", i, jv)
        self.jv_invalid_get_msg = fn("jv_invalid_get_msg", jv, jv)
        self.jv_dump_string = fn("jv_dump_string", jv, jv, i)
        self.jv_string_value = fn("jv_string_value", vp, jv)
        self.jv_string_length_bytes = fn("jv_string_length_bytes", i, jv)
        self.jv_number_value = fn("jv_number_value", ctypes.c_double, jv)
        self.jv_parse = fn("jv_parse", jv, ctypes.c_char_p)
        self.jv_string = fn("jv_string", jv, ctypes.c_char_p)
        self.jv_array = fn("jv_array", jv)
        self.jv_array_length = fn("jv_array_length", i, jv)
        self.jv_array_get = fn("jv_array_get", jv, jv, i)
        self.jv_null = fn("jv_null", jv)
        self.jv_invalid = fn("jv_invalid", jv)

    def string_bytes(self, value: Jv, limit: int | None = None) -> bytes:
        """The UTF-8 bytes of a jv string (at most `limit`); does not consume `value`."""
        length = self.jv_string_length_bytes(self.jv_copy(value))
        if limit is not None:
            length = min(length, limit)
        return ctypes.string_at(self.jv_string_value(value), length)

    def message_text(self, message: Jv) -> str:
        """A jq error value as text, the way the CLI shows it; consumes `message`."""
        if self.jv_get_kind(message) == KIND_STRING:
            text = self.string_bytes(message).decode("utf-8", "replace")
            self.jv_free(message)
            return text
        dumped = self.jv_dump_string(message, PRINT_COMPACT)
        text = self.string_bytes(dumped).decode("utf-8", "replace")
        self.jv_free(dumped)
        return text


class CompileError(Exception):
    pass


class ErrorSink:
    """Collects libjq's compile messages. One C callback for the process, made before the sandbox closes: libffi
    may need a temporary file to create a callback, which Landlock would refuse later."""

    LIMIT = 50

    def __init__(self, lib: LibJq) -> None:
        self.lib = lib
        self.messages: list[str] = []
        self.callback = _ErrorCallback(self._on_error)
        self.pointer = ctypes.cast(self.callback, ctypes.c_void_p)

    def _on_error(self, _data: int | None, message: Jv) -> None:
        text = self.lib.message_text(message)
        if len(self.messages) < self.LIMIT:
            self.messages.append(text)


class Program:
    """A compiled jq program (one `jq_state`), reusable across runs: `jq_start` resets it."""

    def __init__(self, lib: LibJq, sink: ErrorSink, source: str) -> None:
        self.lib = lib
        self.state: int | None = lib.jq_init()
        if not self.state:
            raise MemoryError("jq_init failed")
        lib.jq_set_error_cb(self.state, sink.pointer, None)
        # No module search path at all (import/include are also rejected before we get here).
        lib.jq_set_attr(self.state, lib.jv_string(b"JQ_LIBRARY_PATH"), lib.jv_array())
        args = lib.jv_parse(b'{"ARGS":{"positional":[],"named":{}}}')  # `$ARGS` as the CLI defines it
        sink.messages.clear()
        compiled = lib.jq_compile_args(self.state, source.encode("utf-8"), args)
        errors = "\n".join(sink.messages)
        sink.messages.clear()
        if not compiled:
            self.close()
            raise CompileError(errors or "jq: the program did not compile")

    def close(self) -> None:
        if self.state:
            state = ctypes.c_void_p(self.state)
            self.lib.jq_teardown(ctypes.byref(state))
            self.state = None


@dataclass
class CachedInput:
    """The parsed values of one stored output, kept for the next queries on it."""

    key: str
    size: int  # source bytes
    records: int  # top-level JSON values
    value: Jv  # the value itself when records == 1, else the array of all of them; owned by the cache
    cost: int  # heap bytes the parsed values hold


@dataclass(frozen=True)
class CacheLimits:
    entries: int
    input_bytes: int
    memory_bytes: int

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> CacheLimits:
        return cls(
            entries=int(request.get("cache_inputs", 0)),
            input_bytes=int(request.get("cache_input_bytes", 0)),
            memory_bytes=int(request.get("cache_memory_bytes", 0)),
        )

    def admits(self, size: int, cost: int) -> bool:
        return self.entries > 0 and size <= self.input_bytes and cost <= self.memory_bytes


class InputCache:
    """Parsed inputs by key, least recently used first; bounded by count, source bytes and heap bytes."""

    def __init__(self, lib: LibJq) -> None:
        self.lib = lib
        self.entries: OrderedDict[str, CachedInput] = OrderedDict()

    @property
    def cost(self) -> int:
        return sum(entry.cost for entry in self.entries.values())

    def get(self, key: str, size: int) -> CachedInput | None:
        entry = self.entries.get(key)
        if entry is None or entry.size != size:
            return None
        self.entries.move_to_end(key)
        return entry

    def put(self, entry: CachedInput, limits: CacheLimits) -> int:
        """Keep `entry` (owning its value) if it fits at all, evicting the oldest; returns the heap bytes freed."""
        if not limits.admits(entry.size, entry.cost):
            self.lib.jv_free(entry.value)
            return entry.cost
        freed = self._drop(entry.key)
        self.entries[entry.key] = entry
        return freed + self.shrink(limits)

    def shrink(self, limits: CacheLimits) -> int:
        freed = 0
        while self.entries and (
            len(self.entries) > limits.entries
            or sum(e.size for e in self.entries.values()) > limits.input_bytes
            or self.cost > limits.memory_bytes
        ):
            freed += self._drop(next(iter(self.entries)))
        return freed

    def clear(self, keep: str | None = None) -> int:
        return sum(self._drop(key) for key in list(self.entries) if key != keep)

    def _drop(self, key: str) -> int:
        entry = self.entries.pop(key, None)
        if entry is None:
            return 0
        self.lib.jv_free(entry.value)
        return entry.cost

    def listing(self) -> list[list[Any]]:
        """[key, records, cost] per entry, oldest first: the server mirrors this to route and to skip sending."""
        return [[entry.key, entry.records, entry.cost] for entry in self.entries.values()]


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


class HeapMeter:
    """Heap bytes in use (glibc `mallinfo2`: exact, all arenas), to price a parsed input; None elsewhere."""

    def __init__(self) -> None:
        self._mallinfo2: Any = None
        with contextlib.suppress(AttributeError, OSError):
            func = _libc().mallinfo2
            func.restype = _MallInfo2
            func.argtypes = []
            self._mallinfo2 = func

    def used(self) -> int | None:
        if self._mallinfo2 is None:
            return None
        info = self._mallinfo2()
        return int(info.uordblks + info.hblkhd)


class Engine:
    """Compiles (with a small cache) and runs programs over an input buffer or cached values, like jq's `main.c`."""

    def __init__(self, lib: LibJq) -> None:
        self.lib = lib
        self.sink = ErrorSink(lib)
        self.inputs = InputCache(lib)
        self.meter = HeapMeter()
        self._programs: OrderedDict[tuple[str, str], Program | None] = OrderedDict()

    def program(self, source: str, variant: str = "plain") -> Program | None:
        """`source` compiled as is ("plain": raises CompileError with jq's own message and positions), or wrapped
        in a loop over the inputs ("looped": the stream, "each": an array of cached values); None when the wrapped
        form does not compile (e.g. a `module` directive or a program that is only definitions)."""
        key = (source, variant)
        if key in self._programs:
            self._programs.move_to_end(key)
            return self._programs[key]
        if variant == "plain":
            compiled: Program | None = Program(self.lib, self.sink, source)
        else:
            prefix, suffix = _WRAPPERS[variant]
            try:
                compiled = Program(self.lib, self.sink, prefix + source + suffix)
            except CompileError:
                compiled = None
        self._programs[key] = compiled
        while len(self._programs) > CACHED_PROGRAMS:
            _, old = self._programs.popitem(last=False)
            if old is not None:
                old.close()
        return compiled

    def compile_error(self, source: str) -> dict[str, Any] | None:
        try:
            self.program(source)
        except CompileError as exc:
            return {"ok": False, "error": "compile", "message": str(exc)}
        return None

    def parse_all(self, address: int, size: int) -> tuple[Jv, int] | None:
        """Every JSON value of the buffer, parsed in one C loop (jq's `--slurp`): (the value when there is exactly
        one, else the array of them; their count). None when the buffer is not valid JSON: the stream then reports
        the error at the point where jq meets it, after the results before it, as the CLI does."""
        lib = self.lib
        inputs = lib.input_init(None, None)
        parser = lib.jv_parser_new(0)
        lib.input_set_parser(inputs, parser, 1)  # `inputs` now owns the parser
        lib.jv_parser_set_buf(parser, address if size else None, size, 0)
        try:
            values = lib.input_next(inputs)
        finally:
            holder = ctypes.c_void_p(inputs)
            lib.input_free(ctypes.byref(holder))
        if lib.jv_get_kind(values) != KIND_ARRAY:
            lib.jv_free(values)
            return None
        records = lib.jv_array_length(lib.jv_copy(values))
        if records == 1:
            return lib.jv_array_get(values, 0), 1
        return values, records

    def run_stream(self, source: str, address: int, size: int, printer: _Printer) -> dict[str, Any]:
        """Parse as the program goes, as the CLI does (call `compile_error` first)."""
        lib = self.lib
        plain = self.program(source)
        looped = self.program(source, "looped")
        program, loops_itself = (looped, True) if looped is not None else (plain, False)
        assert program is not None and program.state
        state = program.state
        inputs = lib.input_init(None, None)
        parser = lib.jv_parser_new(0)
        lib.input_set_parser(inputs, parser, 0)  # `inputs` now owns the parser
        lib.jv_parser_set_buf(parser, address if size else None, size, 0)  # the whole output, final
        lib.jq_set_input_cb(state, lib.input_next_cb, inputs)
        try:
            return self._loop(program, lambda: lib.input_next(inputs), printer, loops_itself)
        finally:
            lib.jq_set_input_cb(state, None, None)
            holder = ctypes.c_void_p(inputs)
            lib.input_free(ctypes.byref(holder))
            # A program stopped early (output cap, error) still holds its input on jq's stack; restarting it on
            # `null` frees that now instead of whenever this cached program runs again.
            lib.jq_start(state, lib.jv_null(), 0)

    def run_parsed(self, source: str, entry: CachedInput, printer: _Printer) -> dict[str, Any]:
        """Run over cached values (call `compile_error` first). The program gets its own references only: the
        cache's value is never handed over, so nothing a run does can change or free it."""
        lib = self.lib
        plain = self.program(source)
        each = self.program(source, "each") if entry.records != 1 else None
        values: list[Callable[[], Jv]]
        if entry.records == 1 or each is not None:
            program, once = (plain if entry.records == 1 else each), True
            values = [lambda: lib.jv_copy(entry.value)]
        else:  # a program jq cannot wrap: run it on each value in turn, as `run_stream` does
            program, once = plain, False
            values = [lambda i=i: lib.jv_array_get(lib.jv_copy(entry.value), i) for i in range(entry.records)]
        assert program is not None and program.state
        state = program.state
        feed = iter(values)
        lib.jq_set_input_cb(state, None, None)  # `input`: "break", `inputs`: empty, as after the last value

        def next_input() -> Jv:
            produce = next(feed, None)
            return lib.jv_invalid() if produce is None else produce()

        try:
            return self._loop(program, next_input, printer, once)
        finally:
            lib.jq_start(state, lib.jv_null(), 0)  # drop the run's references to the cached value now

    def _loop(self, program: Program, next_input: Callable[[], Jv], printer: _Printer, once: bool) -> dict[str, Any]:
        """jq's `main.c` loop: run the program on each input; stop at the first error (the CLI goes on)."""
        lib, state = self.lib, program.state
        while True:
            value = next_input()
            if lib.jv_get_kind(value) == KIND_INVALID:
                if lib.jv_invalid_has_msg(lib.jv_copy(value)):
                    message = lib.message_text(lib.jv_invalid_get_msg(value))
                    return {"ok": False, "error": "input", "message": message, **printer.summary()}
                lib.jv_free(value)
                return {"ok": True, **printer.summary()}
            lib.jq_start(state, value, 0)
            while True:
                result = lib.jq_next(state)
                if lib.jv_get_kind(result) != KIND_INVALID:
                    if not printer.add(result):
                        return {"ok": True, **printer.summary()}
                    continue
                if lib.jq_halted(state):
                    lib.jv_free(result)
                    return self._halted(state, printer)
                if lib.jv_invalid_has_msg(lib.jv_copy(result)):
                    message = lib.jv_invalid_get_msg(result)
                    is_string = lib.jv_get_kind(message) == KIND_STRING
                    text = lib.message_text(message)
                    return {"ok": False, "error": "runtime", "message": text, "string": is_string, **printer.summary()}
                lib.jv_free(result)
                break
            if once:  # the program itself went over every input
                return {"ok": True, **printer.summary()}

    def _halted(self, state: int, printer: _Printer) -> dict[str, Any]:
        lib = self.lib
        code_jv = lib.jq_get_exit_code(state)
        kind = lib.jv_get_kind(code_jv)
        if kind == KIND_INVALID:
            code = 0
        elif kind == KIND_NUMBER:
            code = int(lib.jv_number_value(code_jv))
        else:
            code = 5
        lib.jv_free(code_jv)
        message_jv = lib.jq_get_error_message(state)
        message_kind = lib.jv_get_kind(message_jv)
        if message_kind in (KIND_INVALID, KIND_NULL):
            lib.jv_free(message_jv)
            message = ""
        else:
            message = lib.message_text(message_jv)
        return {"ok": code == 0, "error": "halt", "exit_code": code, "message": message, **printer.summary()}

    def close(self) -> None:
        self.inputs.clear()
        for program in self._programs.values():
            if program is not None:
                program.close()
        self._programs.clear()


class _Printer:
    """Formats results as the CLI prints them, stopping at the character cap."""

    def __init__(self, lib: LibJq, *, compact: bool, raw: bool, max_chars: int) -> None:
        self.lib = lib
        self.flags = PRINT_COMPACT if compact else PRINT_PRETTY_INDENT_2
        self.raw = raw
        self.left = max_chars
        self.parts: list[str] = []
        self.results = 0
        self.truncated = False

    def add(self, result: Jv) -> bool:
        """Print one result (consumed); False once the cap is reached (stop iterating)."""
        lib = self.lib
        if self.results:
            if self.left < 1:
                lib.jv_free(result)
                self.truncated = True
                return False
            self.parts.append("\n")
            self.left -= 1
        if self.raw and lib.jv_get_kind(result) == KIND_STRING:
            text = lib.string_bytes(result, 4 * self.left + 4)  # > left chars whenever the string is longer
            lib.jv_free(result)
        else:
            dumped = lib.jv_dump_string(result, self.flags)
            text = lib.string_bytes(dumped, 4 * self.left + 4)
            lib.jv_free(dumped)
        decoded = text.decode("utf-8", "replace")
        self.results += 1
        if len(decoded) > self.left:  # a longer string was fetched only in part
            self.parts.append(decoded[: self.left])
            self.left = 0
            self.truncated = True
            return False
        self.parts.append(decoded)
        self.left -= len(decoded)
        return True

    def summary(self) -> dict[str, Any]:
        return {"text": "".join(self.parts), "results": self.results, "truncated": self.truncated}


# -- sandbox -------------------------------------------------------------------------------------------------------
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent_pid: int) -> None:
    """Never outlive the server: a kernel signal on Linux, and a watchdog thread everywhere.

    ctypes releases the GIL during libjq calls, so the watchdog runs even while a program spins.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def enter_empty_directory() -> None:
    """cwd = a directory that no longer exists: every relative path lookup fails."""
    path = tempfile.mkdtemp(prefix="jq-worker-")
    os.chdir(path)
    os.rmdir(path)


def landlock_everything() -> bool:
    """Forbid all filesystem access (and TCP) from now on. Best effort: False where Landlock is unavailable.

    Descriptors opened before (the socket, /proc/self/statm) and descriptors received later keep working.
    """
    if not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"):
        return False
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return False
    fs_bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)  # REFER (v2), TRUNCATE (v3), IOCTL_DEV (v5)
    handled_fs = (1 << fs_bits) - 1
    handled_net = 0b11 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP
    scoped = 0b11 if abi >= 6 else 0  # abstract UNIX sockets | signals
    if abi >= 6:
        attr: bytes = struct.pack("=QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("=Q", handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        return False
    try:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), 0) == 0
    finally:
        os.close(ruleset)


class MemoryCap:
    """RLIMIT_AS = what the process maps now + `extra` (see `handle`), set before each query."""

    def __init__(self) -> None:
        try:  # opened now: Landlock forbids opening it later
            self._statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._statm = -1  # no procfs (not Linux): no memory cap
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._hard = resource.getrlimit(resource.RLIMIT_AS)[1]

    def mapped_bytes(self) -> int:
        return int(os.pread(self._statm, 256, 0).split()[0]) * self._page

    def limit(self, extra: int) -> None:
        if self._statm < 0:
            return
        soft = self.mapped_bytes() + extra
        if self._hard != resource.RLIM_INFINITY:
            soft = min(soft, self._hard)
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_AS, (soft, self._hard))

    def lift(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_AS, (self._hard, self._hard))


# -- the input buffer ----------------------------------------------------------------------------------------------
class _Mapping:
    """A read-only private mapping of the stored file (no copy; pages come from the page cache)."""

    PROT_READ, MAP_PRIVATE = 1, 2

    def __init__(self, fd: int, size: int) -> None:
        libc = _libc()
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._munmap = libc.munmap
        self.size = size
        self.address = 0
        if size:
            address = libc.mmap(None, size, self.PROT_READ, self.MAP_PRIVATE, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise MemoryError("mmap of the stored output failed")
            self.address = address
            with contextlib.suppress(AttributeError, OSError):
                libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(size), 2)  # MADV_SEQUENTIAL

    def close(self) -> None:
        if self.address:
            self._munmap(self.address, self.size)
            self.address = 0


def _receive_bytes(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise EOFError("the server closed the socket mid-input")
        got += n
    return buffer


# -- main loop -----------------------------------------------------------------------------------------------------
def handle(engine: Engine, cap: MemoryCap, sock: socket.socket, request: dict[str, Any], fds: list[int]) -> dict:
    """One query. Input comes from the cache (a hit), or from the file/bytes sent with the request: then it is
    parsed whole and cached when that is worth it (`_parse_whole`), else streamed as the CLI does.

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
            _drain(sock, size)
        if size > 2**31 - 1:  # jv_parser_set_buf takes an int
            return {"ok": False, "error": "too_large", "message": "the output is over 2 GiB"}
        if entry is None:  # the server thought this worker had it: it sends the input again
            return {"ok": False, "error": "cache_miss", "message": "not cached"}
    hit = entry is not None
    fresh: CachedInput | None = None
    mapping: _Mapping | None = None
    buffer: bytearray | None = None
    holder: Any = None
    try:
        if hit:
            cap.limit(max(memory - cache.cost, MIN_HEADROOM))
        else:
            cap.limit(max(memory + size - cache.cost, size + MIN_HEADROOM))
            if fds:
                try:
                    mapping = _Mapping(fds[0], size)
                finally:
                    for fd in fds:
                        os.close(fd)
                address = mapping.address
            else:
                buffer = _receive_bytes(sock, size)
                holder = (ctypes.c_char * size).from_buffer(buffer) if size else None
                address = ctypes.addressof(holder) if size else 0
        error = engine.compile_error(program)
        if error is not None:
            return error
        started = time.perf_counter()
        if not hit and key is not None and _parse_whole(request, size, program, limits):
            before = engine.meter.used()
            parsed = engine.parse_all(address, size)
            if parsed is not None:
                after = engine.meter.used()
                cost = after - before if after is not None and before is not None else size * 8
                fresh = CachedInput(key, size, parsed[1], parsed[0], max(cost, size))
                if cache_serves(program, fresh.records):
                    entry = fresh
        printer = _Printer(
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
            with contextlib.suppress(AttributeError, OSError):
                _libc().malloc_trim(0)


def _parse_whole(request: dict[str, Any], size: int, program: str, limits: CacheLimits) -> bool:
    """Whether to parse a new input whole (to run on, then cache) instead of streaming it.

    A JSON document is one value, parsed whole before the program starts either way. JSON Lines stream one record
    at a time, and a program cut short by the output cap reads only the first ones: they are parsed whole only when
    they would fit the cache, and never for a program that reads the stream itself.
    """
    if not limits.admits(size, 0) or "input_" in program:
        return False
    if request.get("kind") == "json":
        return True
    return "input" not in program and size * PARSED_BYTES_PER_SOURCE_BYTE <= limits.memory_bytes


def _drain(sock: socket.socket, size: int) -> None:
    left = size
    while left > 0:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the server closed the socket mid-input")
        left -= len(chunk)


def main(argv: list[str]) -> int:
    libjq_path, parent_pid, socket_fd = argv[1], int(argv[2]), int(argv[3])
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
