"""The libjq binding: the C API that jq's own `main.c` drives, typed for ctypes, and a compiled program.

`Jv` is libjq's 16-byte value, passed by value everywhere; the `jv_*` functions consume their arguments (hence
`jv_copy` wherever a value is looked at and kept). `ErrorSink` collects compile messages through the one C callback
of the process, and `Program` is one compiled `jq_state`.
"""

from __future__ import annotations

import ctypes
from typing import Any

# jv kinds and printer flags, from jv.h
KIND_INVALID, KIND_NULL, KIND_FALSE, KIND_TRUE, KIND_NUMBER, KIND_STRING, KIND_ARRAY, KIND_OBJECT = range(8)
PRINT_PRETTY_INDENT_2 = (2 << 8) | 1  # JV_PRINT_INDENT_FLAGS(2): the CLI default
PRINT_COMPACT = 0  # `jq -c`


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
