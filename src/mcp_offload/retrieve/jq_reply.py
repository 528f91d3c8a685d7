"""What a jq worker's reply means: a `JqResult`, or the `QueryError` the model reads.

Invariant: every error the worker can report maps to a message that says what happened and what to do next, in
the jq CLI's words where it has them (`jq: error: ...`); an unknown reply is a plain "failed unexpectedly", never
a traceback or the raw reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_offload.errors import QueryError
from mcp_offload.store.base import StoredOutput

OUT_OF_MEMORY = "the jq program ran out of memory and was stopped. Narrow it or process less data."


@dataclass(frozen=True)
class JqResult:
    text: str
    results: int
    truncated: bool
    elapsed_s: float
    cached: bool = False  # the input was already parsed in the worker (no parse this time)


def result_of(reply: dict[str, Any], output: StoredOutput, elapsed: float) -> JqResult:
    """The result of a successful reply; raises the `QueryError` a failed one means."""
    if reply.get("ok"):
        return JqResult(
            text=str(reply["text"]),
            results=int(reply["results"]),
            truncated=bool(reply["truncated"]),
            elapsed_s=elapsed,
            cached=bool(reply.get("cached")),
        )
    error, message = reply.get("error"), str(reply.get("message", ""))
    if error == "compile":
        raise QueryError(message)
    if error == "runtime":
        shown = f"jq: error: {message}" if reply.get("string") else f"jq: error (not a string): {message}"
        if message == "break":
            shown += " (this is how jq says that input/inputs read past the last JSON value)"
        raise QueryError(shown)
    if error == "halt":
        detail = f": {message.rstrip()}" if message.strip() else ""
        raise QueryError(f"the jq program stopped with halt_error, exit status {reply.get('exit_code')}{detail}")
    if error == "input":
        raise QueryError(
            f"jq could not parse output {output.meta.handle} as JSON ({message}). "
            "Use read_large_output or search_large_output on it instead."
        )
    if error == "memory":
        raise QueryError(OUT_OF_MEMORY)
    if error == "too_large":
        raise QueryError(f"output {output.meta.handle} is too large for jq (over 2 GiB).")
    raise QueryError("jq failed unexpectedly on this output.")
