"""The public tools: validate arguments, call the services, shape text + structuredContent.

Tool and parameter names are a public contract. Errors from below (`OffloadError`) are translated here, once,
into an `isError` result written for the model; anything unexpected becomes a generic message and a log line:
no traceback crosses the wire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_offload.core import api
from mcp_offload.core.progress import ProgressFn
from mcp_offload.core.render import render_list, render_query, render_read, render_reference, render_search
from mcp_offload.core.results import ListOutput, OffloadOutput, QueryOutput, ReadOutput, SearchOutput, output_schema
from mcp_offload.core.services import Services
from mcp_offload.errors import OffloadError, UnknownHandle

log = logging.getLogger(__name__)


# -- arguments ------------------------------------------------------------------------------------------
class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown parameters are refused, strings are not capped here."""

    model_config = ConfigDict(extra="forbid", str_max_length=None)


class OffloadArgs(ToolArgs):
    content: str = Field(description="The full text to store (e.g. a large tool result). JSON is detected.")
    name: str | None = Field(default=None, description="Optional label shown in list_outputs, e.g. 'gh issues'.")


class ReadArgs(ToolArgs):
    handle: str = Field(description="Handle returned by offload or list_outputs, e.g. 'out_…'.")
    start: int | None = Field(default=None, description="First character, 1-based inclusive.")
    end: int | None = Field(default=None, description="Last character, 1-based inclusive.")
    start_line: int | None = Field(default=None, description="First line, 1-based inclusive.")
    end_line: int | None = Field(default=None, description="Last line, 1-based inclusive.")


class SearchArgs(ToolArgs):
    pattern: str = Field(description="RE2 regular expression (or plain text with literal=true).")
    handle: str | None = Field(default=None, description="Search only this output; omit to search all of them.")
    case_sensitive: bool = Field(default=False, description="Match case exactly (default: ignore case).")
    literal: bool = Field(default=False, description="Treat pattern as plain text, not a regex.")
    max_results: int = Field(default=50, ge=1, description="Matches to return (capped by the server).")
    context_lines: int = Field(default=0, ge=0, description="Lines of context before and after each match (0-10).")
    unit: Literal["line", "record"] = Field(  # "scope" on the wire; not the session scope
        default="line",
        alias="scope",
        description='"line": matching lines (default). "record": for JSON / JSON Lines, also the whole record holding '
        "each match (an element of the outermost array, e.g. one order; a JSON Lines line), once per record.",
    )


class QueryArgs(ToolArgs):
    handle: str = Field(description="Handle of a JSON or JSON Lines output.")
    query: str = Field(description="A jq program, e.g. '.items | length' or '.items[] | select(.ok) | .id'.")
    compact: bool = Field(default=False, description="One line per result (like jq -c).")
    raw: bool = Field(default=False, description="Print strings without quotes (like jq -r).")


class NoArgs(ToolArgs):
    pass


# -- the call context ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool handler gets besides its arguments: the shared services and the caller's session scope."""

    services: Services
    session: api.SessionScope  # whose outputs the call sees (its `.key` is the store's scope key)
    progress: ProgressFn | None = None  # set when the client asked for progress (sent a progress token)


@dataclass(frozen=True, slots=True)
class ToolReply:
    text: str
    structured: BaseModel


# A handler answers with a reply to shape, or with a whole result passed on as it is (a proxied upstream's).
Handler = Callable[[ToolCall, Any], Awaitable[ToolReply | types.CallToolResult]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args: type[ToolArgs]
    output: type[BaseModel]
    handler: Handler
    read_only: bool

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as every tool list (MCP, the compactor's SDK formats) shows it."""
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return schema

    def to_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema(),
            output_schema=output_schema(self.output),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=self.read_only,
                open_world_hint=False,
            ),
        )


async def offload_tool(call: ToolCall, args: OffloadArgs) -> ToolReply:
    out = await api.offload(
        call.services, call.session, args.content, name=args.name, source="offload", progress=call.progress
    )
    return ToolReply(render_reference(out), out)


async def read_tool(call: ToolCall, args: ReadArgs) -> ToolReply:
    out = await api.read(
        call.services,
        call.session,
        args.handle,
        start=args.start,
        end=args.end,
        start_line=args.start_line,
        end_line=args.end_line,
    )
    return ToolReply(render_read(out, call.services.settings.read_max_tokens), out)


async def search_tool(call: ToolCall, args: SearchArgs) -> ToolReply:
    out = await api.search(
        call.services,
        call.session,
        args.pattern,
        handle=args.handle,
        case_sensitive=args.case_sensitive,
        literal=args.literal,
        max_results=args.max_results,
        context_lines=args.context_lines,
        progress=call.progress,
        unit=args.unit,
    )
    return ToolReply(render_search(out, args.handle), out)


async def query_tool(call: ToolCall, args: QueryArgs) -> ToolReply:
    out = await api.query(
        call.services,
        call.session,
        args.handle,
        args.query,
        compact=args.compact,
        raw=args.raw,
        progress=call.progress,
    )
    return ToolReply(render_query(out, call.services.settings.jq_max_output_chars), out)


async def list_tool(call: ToolCall, args: NoArgs) -> ToolReply:
    out = await api.list_outputs(call.services, call.session)
    return ToolReply(render_list(out), out)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="offload",
        title="Offload a large text",
        description=(
            "Store a large text (tool output, file, log, JSON) outside the conversation and get back a handle plus a "
            "small preview. Use it for anything over a few thousand tokens, then pull back only what you need with "
            "read_large_output / search_large_output / query_large_output.\n"
            'Example: offload(content="<200 KB of JSON>", name="issues") → handle "out_…", kind json, its shape '
            "and jq paths that work."
        ),
        args=OffloadArgs,
        output=OffloadOutput,
        handler=offload_tool,
        read_only=False,
    ),
    ToolSpec(
        name="read_large_output",
        title="Read part of a stored output",
        description=(
            "Read an exact slice of a stored output, by 1-based inclusive character positions (start/end) or lines "
            "(start_line/end_line). One read returns at most about 5,000 tokens; a longer request is cut and the "
            "result says where to continue.\n"
            'Example: read_large_output(handle="out_…", start_line=120, end_line=160) → those 41 lines verbatim.'
        ),
        args=ReadArgs,
        output=ReadOutput,
        handler=read_tool,
        read_only=True,
    ),
    ToolSpec(
        name="search_large_output",
        title="Search stored outputs",
        description=(
            "Find lines matching a regular expression (RE2 syntax: no backreferences or lookarounds; \\w \\d \\b are "
            "ASCII-only, use \\pL for letters) or plain text (literal=true) in one stored output, or in all of "
            "this session's outputs when handle is omitted. "
            "Returns line numbers and character positions you can pass to read_large_output; in JSON, also the jq "
            "path of each match (for query_large_output) and the names/ids of the objects around it.\n"
            'Example: search_large_output(pattern="timeout|refused", handle="out_…", context_lines=2) → '
            '"4812 [chars 301220–301226]: … connection refused …" (line 4812; without a handle: "out_…:4812 …").\n'
            'Example: search_large_output(pattern="ord-1234", handle="out_…", literal=true, scope="record") → the '
            "match at .data.orders[57].id and that whole order."
        ),
        args=SearchArgs,
        output=SearchOutput,
        handler=search_tool,
        read_only=True,
    ),
    ToolSpec(
        name="query_large_output",
        title="Query stored JSON with jq",
        description=(
            "Run a jq program over a stored JSON output (JSON Lines: over each record). Output is formatted like the "
            "jq command line; time and size are capped.\n"
            'Example: query_large_output(handle="out_…", query=".items[] | select(.state == \\"open\\") | .title", '
            "raw=true) → one title per line."
        ),
        args=QueryArgs,
        output=QueryOutput,
        handler=query_tool,
        read_only=True,
    ),
    ToolSpec(
        name="list_outputs",
        title="List stored outputs",
        description=(
            "List this session's stored outputs, newest first: handle, name, kind, size and tokens.\n"
            'Example: list_outputs() → "out_… \\"issues\\" json, 204,800 bytes, …".'
        ),
        args=NoArgs,
        output=ListOutput,
        handler=list_tool,
        read_only=True,
    ),
)

TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}
# the tools whose results bring stored content back into the context (what the savings figure subtracts)
READ_BACK_TOOLS = frozenset({"read_large_output", "search_large_output", "query_large_output"})


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


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def call_tool(spec: ToolSpec, call: ToolCall, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Validate, run, and shape one call. Never raises for bad input or failed operations."""
    started = time.perf_counter()
    try:
        args = spec.args.model_validate(arguments or {})
    except ValidationError as exc:
        return error_result(_validation_message(spec, exc))
    try:
        reply = await spec.handler(call, args)
    except UnknownHandle as exc:
        return error_result(f"{exc}. {await api.known_handles(call.services, call.session)}")
    except OffloadError as exc:
        return error_result(str(exc))
    except Exception:
        log.exception("tool %s failed", spec.name)
        return error_result(f"{spec.name} failed unexpectedly on the server; nothing was changed. Try again.")
    log.debug("tool %s took %.1f ms", spec.name, (time.perf_counter() - started) * 1000)
    if isinstance(reply, types.CallToolResult):
        return reply
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reply.text)],
        structured_content=reply.structured.model_dump(mode="json"),
    )
