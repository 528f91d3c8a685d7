"""Running one tool call, answered in plain values: the one place a model-facing error becomes an answer.

    run_tool(spec, context, arguments) -> ToolAnswer(text, is_error, result)

validates the arguments against the spec's model, runs its handler and answers; it never raises for bad input or a
failed operation. Every front end runs our tools through it and converts the answer to its own form: the MCP server
into a `CallToolResult` (`mcp_server/tools.py`), the gateway into a tool result in the provider's format, the Compactor
and the framework adapters into a string.

The translation (`answer_error`) is also what a front end calls for a model-facing error raised outside a tool (the
proxy: a stored output named in an upstream tool's arguments):

    OffloadError            its message (`str(error)`), written for the model
    UnknownHandle           the message, and the handles this session has (or what to do instead)
    anything else           "<tool> failed unexpectedly on the server; …" and a log line: no traceback crosses
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from mcp_offload.core import outputs
from mcp_offload.core.tools import CallContext, ToolArgs, ToolSpec
from mcp_offload.errors import OffloadError, UnknownHandle

log = logging.getLogger(__name__)
T = TypeVar("T")

OTHER_PROCESS_HINT = (
    "This server has a private session: outputs stored by another mcp-offload process or an earlier run are not "
    "visible here. To share them, start every process with the same --session NAME (env MCP_OFFLOAD_SESSION; "
    "a Compactor: session=NAME)."
)


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a tool call answers: the text the model reads, whether it is an error, and (for a success) the whole
    result model as JSON-ready data, for programs (the MCP server puts it in `_meta`)."""

    text: str
    is_error: bool = False
    result: dict[str, Any] | None = None


def error_answer(text: str) -> ToolAnswer:
    return ToolAnswer(text, is_error=True)


async def answer_error(error: OffloadError, context: CallContext) -> ToolAnswer:
    """The answer to a model-facing error: its message, with the session's handles after an unknown one."""
    if isinstance(error, UnknownHandle):
        hint = await outputs.known_handles(context.services, context.session)
        if context.private_session:
            hint += f" {OTHER_PROCESS_HINT}"
        return error_answer(f"{error}. {hint}")
    return error_answer(str(error))


def parse_arguments(spec: ToolSpec, arguments: dict[str, Any] | None) -> ToolArgs | ToolAnswer:
    """The arguments as the spec's model, or the answer naming what is wrong with them."""
    try:
        return spec.args.model_validate(arguments or {})
    except ValidationError as exc:
        return error_answer(_validation_message(spec, exc))


async def guarded(name: str, context: CallContext, run: Callable[[], Awaitable[T]]) -> T | ToolAnswer:
    """What `run()` returns, or the answer to what it raised (a model-facing error, or a generic message)."""
    try:
        return await run()
    except OffloadError as exc:
        return await answer_error(exc, context)
    except Exception:
        log.exception("tool %s failed", name)
        return error_answer(f"{name} failed unexpectedly on the server; nothing was changed. Try again.")


async def run_tool(spec: ToolSpec, context: CallContext, arguments: dict[str, Any] | None) -> ToolAnswer:
    """Validate, run and answer one call of `spec`. Never raises for bad input or failed operations."""
    started = time.perf_counter()
    args = parse_arguments(spec, arguments)
    if isinstance(args, ToolAnswer):
        return args

    async def run() -> ToolAnswer:
        reply = await spec.handler(context, args)
        return ToolAnswer(reply.text, result=reply.result.model_dump(mode="json"))

    answer = await guarded(spec.name, context, run)
    if not answer.is_error:
        log.debug("tool %s took %.1f ms", spec.name, (time.perf_counter() - started) * 1000)
    return answer


def _validation_message(spec: ToolSpec, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(field.alias or name for name, field in spec.args.model_fields.items())
            msg = f"unknown parameter (this tool takes: {allowed})"
        problems.append(f"{where}: {msg}")
    return f"Invalid arguments for {spec.name}: " + "; ".join(problems)
