"""Vetting a jq program and its input before any of it reaches a worker: pure functions, no process involved.

A program must be a string of bounded size with no NUL or unpaired surrogate, and must not use `import`/`include`
(the only way a jq program names a file: the first layer of the worker's file sandbox, see `jq_worker`). The input
must be a JSON or JSON Lines output. Each failure is a `QueryError` that tells the model what to do instead.
"""

from __future__ import annotations

import re

from mcp_offload.errors import QueryError
from mcp_offload.store.base import StoredOutput

_IDENT = re.compile(r"(?:[A-Za-z_][A-Za-z_0-9]*::)*[A-Za-z_][A-Za-z_0-9]*")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_FORMAT = re.compile(r"[A-Za-z0-9_]+")
_DIRECTIVES = frozenset({"import", "include"})


def find_directive(program: str) -> str | None:
    """The first `import`/`include` keyword used as a directive, or None.

    A small copy of jq's lexer: string literals (with `\\(...)` interpolation, which is code again), comments
    (`#` to end of line; a backslash continues it, as in jq 1.7+), fields (`.import`) and variables (`$import`) are
    skipped. The words are allowed as object keys (`{import: 1}`, directly inside braces), where jq accepts
    keywords; a directive can only stand at the top level of a program, never inside braces.
    """
    stack: list[str] = []  # "(", "[", "{", "I" (string interpolation), "S" (inside a string)
    i, n = 0, len(program)
    while i < n:
        c = program[i]
        if stack and stack[-1] == "S":
            if c == '"':
                stack.pop()
                i += 1
            elif c == "\\":
                if program.startswith("\\(", i):
                    stack.append("I")
                i += 2
            else:
                i += 1
            continue
        if c == "#":
            i += 1
            while i < n and program[i] != "\n":
                if program[i] == "\\" and program.startswith(("\\\\", "\\\n", "\\\r\n"), i):
                    i += 3 if program.startswith("\\\r\n", i) else 2
                else:
                    i += 1
            continue
        if c == '"':
            stack.append("S")
        elif c in "([{":
            stack.append(c)
        elif c in ")]}":
            if stack:
                stack.pop()
        elif c == ".":
            match = _FIELD.match(program, i + 1)
            if match:
                i = match.end()
                continue
        elif c == "$":
            match = _IDENT.match(program, i + 1)
            if match:
                i = match.end()
                continue
        elif c == "@":
            match = _FORMAT.match(program, i + 1)
            if match:
                i = match.end()
                continue
        elif c.isalpha() or c == "_":
            match = _IDENT.match(program, i)
            if match:
                word = match.group()
                if word in _DIRECTIVES and not (stack and stack[-1] == "{"):
                    return word
                i = match.end()
                continue
        i += 1
    return None


def check_program(program: object, max_chars: int) -> str:
    """Validate a program's type, size and directives; returns it unchanged."""
    if not isinstance(program, str):
        raise QueryError(f"the jq program must be a string, not {type(program).__name__}.")
    if len(program) > max_chars:
        raise QueryError(
            f"the jq program is {len(program)} characters long; the limit is {max_chars}. Write a shorter program."
        )
    if "\x00" in program:
        raise QueryError("the jq program contains a NUL character; remove it.")
    try:
        program.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError("the jq program contains an unpaired surrogate character; remove it.") from exc
    directive = find_directive(program)
    if directive is not None:
        raise QueryError(
            f"jq `{directive}` directives are not allowed here: programs cannot read modules or files. "
            "Define what you need inline with `def name: ...;` instead."
        )
    return program


def check_kind(output: StoredOutput) -> None:
    """Refuse an output jq cannot run on (anything but JSON and JSON Lines)."""
    if output.meta.kind in ("json", "jsonl"):
        return
    raise QueryError(
        f"output {output.meta.handle} is {output.meta.kind}, not JSON, so jq cannot run on it. "
        "Use search_large_output to find lines in it or read_large_output to read a range."
    )
