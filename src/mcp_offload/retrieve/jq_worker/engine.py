"""The engine: compiles programs (with a small cache) and runs them over an input buffer or cached values the way
jq's `main.c` does, printing results as the CLI prints them (`Printer`) up to the character cap.
"""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .cache import CachedInput, InputCache
from .libc import HeapMeter
from .libjq import (
    KIND_ARRAY,
    KIND_INVALID,
    KIND_NULL,
    KIND_NUMBER,
    KIND_STRING,
    PRINT_COMPACT,
    PRINT_PRETTY_INDENT_2,
    CompileError,
    ErrorSink,
    Jv,
    LibJq,
    Program,
)

CACHED_PROGRAMS = 24  # compiled (program, variant) pairs

# The CLI runs the program once per input; `input`/`inputs` inside it take the following inputs. Letting jq do that
# loop itself (instead of one ctypes round trip per input) is the same semantics and keeps JSON Lines fast.
_LOOP_PREFIX = "def _mcp_offload_run: ("
_LOOP_SUFFIX = "\n); _mcp_offload_run, (inputs | _mcp_offload_run)"
# The same loop over cached values: the array of every input, each one run in order.
_EACH_SUFFIX = "\n); .[] | _mcp_offload_run"
_WRAPPERS = {"looped": (_LOOP_PREFIX, _LOOP_SUFFIX), "each": (_LOOP_PREFIX, _EACH_SUFFIX)}


class Engine:
    """Compiles (with a small cache) and runs programs over an input buffer or cached values, like jq's `main.c`."""

    def __init__(self, lib: LibJq) -> None:
        self.lib = lib
        self.sink = ErrorSink(lib)
        self.inputs = InputCache(lib)
        self.meter = HeapMeter()
        self.trim_due = False  # give freed heap back to the OS once the reply is sent (`main.after_reply`)
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

    def run_stream(self, source: str, address: int, size: int, printer: Printer) -> dict[str, Any]:
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

    def run_parsed(self, source: str, entry: CachedInput, printer: Printer) -> dict[str, Any]:
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
            values = [functools.partial(self._element, entry, i) for i in range(entry.records)]
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

    def _element(self, entry: CachedInput, index: int) -> Jv:
        """A new reference to one value of a cached array (the array itself stays the cache's)."""
        element: Jv = self.lib.jv_array_get(self.lib.jv_copy(entry.value), index)
        return element

    def _loop(self, program: Program, next_input: Callable[[], Jv], printer: Printer, once: bool) -> dict[str, Any]:
        """jq's `main.c` loop: run the program on each input; stop at the first error (the CLI goes on)."""
        lib, state = self.lib, program.state
        assert state, "a program that failed to compile never runs"
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

    def _halted(self, state: int, printer: Printer) -> dict[str, Any]:
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


class Printer:
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
