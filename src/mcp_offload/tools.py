"""The public tools: validate arguments, call the services, shape text + structuredContent.

Tool and parameter names are a public contract. Errors from below (`OffloadError`) are translated here, once,
into an `isError` result written for the model; anything unexpected becomes a generic message and a log line:
no traceback crosses the wire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_offload.errors import ExpiredHandle, OffloadError, SearchError, UnknownHandle
from mcp_offload.offload import describe_size, offload_text, reference_data, render_reference
from mcp_offload.retrieve.read import read_range
from mcp_offload.retrieve.search import SearchOptions, SearchResult, compile_pattern, search_outputs
from mcp_offload.services import Services
from mcp_offload.store.handles import validate_handle

log = logging.getLogger(__name__)


# -- arguments ------------------------------------------------------------------------------------------
class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_max_length=None)


class OffloadArgs(_Args):
    content: str = Field(description="The full text to store (e.g. a large tool result). JSON is detected.")
    name: str | None = Field(default=None, description="Optional label shown in list_outputs, e.g. 'gh issues'.")


class ReadArgs(_Args):
    handle: str = Field(description="Handle returned by offload or list_outputs, e.g. 'out_…'.")
    start: int | None = Field(default=None, description="First character, 1-based inclusive.")
    end: int | None = Field(default=None, description="Last character, 1-based inclusive.")
    start_line: int | None = Field(default=None, description="First line, 1-based inclusive.")
    end_line: int | None = Field(default=None, description="Last line, 1-based inclusive.")


class SearchArgs(_Args):
    pattern: str = Field(description="RE2 regular expression (or plain text with literal=true).")
    handle: str | None = Field(default=None, description="Search only this output; omit to search all of them.")
    case_sensitive: bool = Field(default=False, description="Match case exactly (default: ignore case).")
    literal: bool = Field(default=False, description="Treat pattern as plain text, not a regex.")
    max_results: int = Field(default=50, ge=1, description="Matches to return (capped by the server).")
    context_lines: int = Field(default=0, ge=0, description="Lines of context before and after each match (0-10).")


class QueryArgs(_Args):
    handle: str = Field(description="Handle of a JSON or JSON Lines output.")
    query: str = Field(description="A jq program, e.g. '.items | length' or '.items[] | select(.ok) | .id'.")
    compact: bool = Field(default=False, description="One line per result (like jq -c).")
    raw: bool = Field(default=False, description="Print strings without quotes (like jq -r).")


class NoArgs(_Args):
    pass


# -- results (outputSchema) -------------------------------------------------------------------------------
class OutputFacts(BaseModel):
    """What every result that describes a stored output says about it."""

    handle: str
    name: str | None
    kind: str = Field(description="json | jsonl | text | blob")
    bytes: int
    chars: int
    lines: int
    tokens: int
    tokens_estimated: bool
    mime_type: str | None


class OffloadOutput(OutputFacts):
    notes: list[str]
    preview: str
    shape: dict[str, Any]


class ReadOutput(BaseModel):
    handle: str
    mode: str = Field(description="'chars' or 'lines': the unit of start/end/total/next_start")
    start: int
    end: int
    total: int
    tokens: int
    truncated: bool
    next_start: int | None
    note: str | None
    text: str


class ContextLine(BaseModel):
    line: int
    text: str


class SearchMatchOut(BaseModel):
    handle: str
    line: int
    start: int
    end: int
    text: str
    before: list[ContextLine]
    after: list[ContextLine]


class SearchOutput(BaseModel):
    pattern: str
    matches: list[SearchMatchOut]
    total_matches: int
    total_is_exact: bool
    truncated: bool
    outputs_searched: int


class QueryOutput(BaseModel):
    handle: str
    result: str
    results: int
    truncated: bool
    elapsed_ms: float


class OutputInfo(OutputFacts):
    source: str | None
    created: str


class ListOutput(BaseModel):
    outputs: list[OutputInfo]


# -- the call context ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool handler gets besides its arguments: the shared services and the caller's scope."""

    services: Services
    scope: str  # store scope key
    enumerable: bool = True  # False: no session identity, so listing / search-all are refused


@dataclass(frozen=True, slots=True)
class ToolReply:
    text: str
    structured: BaseModel


Handler = Callable[[ToolCall, Any], Awaitable[ToolReply]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args: type[_Args]
    output: type[BaseModel]
    handler: Handler
    read_only: bool

    def to_tool(self) -> types.Tool:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        out = self.output.model_json_schema()
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=schema,
            output_schema=out,
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=self.read_only,
                open_world_hint=False,
            ),
        )


def _n(value: int) -> str:
    return f"{value:,}"


NOT_ENUMERABLE = (
    "this connection has no session identity (2026-07-28 request without authentication), so outputs cannot be "
    "listed or searched all at once; pass the handle you were given."
)


async def _known_handles(call: ToolCall) -> str:
    if not call.enumerable:
        return "Check the handle you were given."
    metas = await call.services.store.list(call.scope)
    if not metas:
        return "This session has no stored outputs yet."
    shown = ", ".join(m.handle + (f" ({m.name})" if m.name else "") for m in metas[:10])
    more = f" and {len(metas) - 10} more (see list_outputs)" if len(metas) > 10 else ""
    return f"This session's outputs: {shown}{more}."


# -- handlers ---------------------------------------------------------------------------------------------
async def offload_tool(call: ToolCall, args: OffloadArgs) -> ToolReply:
    offloaded = await offload_text(call.services, call.scope, args.content, name=args.name, source="offload")
    return ToolReply(render_reference(offloaded), OffloadOutput(**reference_data(offloaded)))


async def read_tool(call: ToolCall, args: ReadArgs) -> ToolReply:
    handle = validate_handle(args.handle)
    settings = call.services.settings
    async with call.services.store.open(call.scope, handle) as output:
        result = await anyio.to_thread.run_sync(
            lambda: read_range(
                output,
                start=args.start,
                end=args.end,
                start_line=args.start_line,
                end_line=args.end_line,
                max_tokens=settings.read_max_tokens,
                counter=call.services.tokens,
            )
        )
    unit = "lines" if result.mode == "lines" else "chars"
    head = f"[{handle} {unit} {_n(result.start)}–{_n(result.end)} of {_n(result.total)} · {_n(result.tokens)} tokens]"
    tail = []
    if result.note:
        tail.append(f"[{result.note}]")
    if result.next_start is not None:
        key = "start_line" if result.mode == "lines" else "start"
        tail.append(f"[cut at the {_n(settings.read_max_tokens)}-token cap: continue with {key}={result.next_start}]")
    text = "\n".join([head, result.text, *tail]) if tail else f"{head}\n{result.text}"
    structured = ReadOutput(
        handle=handle,
        mode=result.mode,
        start=result.start,
        end=result.end,
        total=result.total,
        tokens=result.tokens,
        truncated=result.truncated,
        next_start=result.next_start,
        note=result.note,
        text=result.text,
    )
    return ToolReply(text, structured)


def _render_search(pattern: str, result: SearchResult, scoped: str | None) -> str:
    where = scoped or f"{result.outputs_searched} output(s)"
    total = _n(result.total_matches) + ("" if result.total_is_exact else "+")
    if not result.matches:
        return f"No match for {pattern!r} in {where}."
    lines = [f"{total} match(es) for {pattern!r} in {where}; showing {len(result.matches)}:"]
    for m in result.matches:
        for number, text in m.before:
            lines.append(f"  {m.handle}:{number}-  {text}")
        lines.append(f"{m.handle}:{m.line} [chars {m.start}–{m.end}]: {m.text}")
        for number, text in m.after:
            lines.append(f"  {m.handle}:{number}-  {text}")
    if result.truncated:
        lines.append("[more matches not shown: raise max_results or narrow the pattern]")
    return "\n".join(lines)


async def search_tool(call: ToolCall, args: SearchArgs) -> ToolReply:
    settings = call.services.settings
    compiled = compile_pattern(
        args.pattern,
        literal=args.literal,
        case_sensitive=args.case_sensitive,
        max_chars=settings.search_max_pattern_chars,
    )
    options = SearchOptions(
        case_sensitive=args.case_sensitive,
        literal=args.literal,
        max_results=min(args.max_results, settings.search_max_results_cap),
        context_lines=args.context_lines,
        line_chars=settings.search_line_chars,
        time_budget_s=settings.search_time_budget_s,
    )
    if args.handle is not None:
        handles = [validate_handle(args.handle)]  # an unknown one raises UnknownHandle when opened below
    else:
        if not call.enumerable:
            raise SearchError("search_large_output needs a handle here: " + NOT_ENUMERABLE)
        handles = [m.handle for m in await call.services.store.list(call.scope) if m.kind != "blob"]
    async with AsyncExitStack() as stack:
        outputs = []
        for handle in handles:
            try:
                outputs.append(await stack.enter_async_context(call.services.store.open(call.scope, handle)))
            except (UnknownHandle, ExpiredHandle):
                if args.handle is not None:
                    raise
        result = await anyio.to_thread.run_sync(
            lambda: search_outputs(outputs, compiled, options, max_results_cap=settings.search_max_results_cap)
        )
    structured = SearchOutput(
        pattern=args.pattern,
        matches=[
            SearchMatchOut(
                handle=m.handle,
                line=m.line,
                start=m.start,
                end=m.end,
                text=m.text,
                before=[ContextLine(line=n, text=t) for n, t in m.before],
                after=[ContextLine(line=n, text=t) for n, t in m.after],
            )
            for m in result.matches
        ],
        total_matches=result.total_matches,
        total_is_exact=result.total_is_exact,
        truncated=result.truncated,
        outputs_searched=result.outputs_searched,
    )
    return ToolReply(_render_search(args.pattern, result, args.handle), structured)


async def query_tool(call: ToolCall, args: QueryArgs) -> ToolReply:
    handle = validate_handle(args.handle)
    async with call.services.store.open(call.scope, handle) as output:
        result = await call.services.jq.run(output, args.query, compact=args.compact, raw=args.raw)
    text = result.text if result.text else "(no output)"
    if result.truncated:
        text += (
            f"\n[output cut at {_n(call.services.settings.jq_max_output_chars)} chars after {result.results} "
            "result(s): narrow the query, e.g. add '| length', 'limit(10; …)' or select fewer fields]"
        )
    structured = QueryOutput(
        handle=handle,
        result=result.text,
        results=result.results,
        truncated=result.truncated,
        elapsed_ms=round(result.elapsed_s * 1000, 3),
    )
    return ToolReply(text, structured)


async def list_tool(call: ToolCall, args: NoArgs) -> ToolReply:
    if not call.enumerable:
        raise OffloadError("list_outputs is unavailable: " + NOT_ENUMERABLE)
    metas = await call.services.store.list(call.scope)
    infos = [
        OutputInfo(
            handle=m.handle,
            name=m.name,
            kind=m.kind,
            bytes=m.size,
            chars=m.chars,
            lines=m.lines,
            tokens=m.tokens,
            tokens_estimated=m.tokens_estimated,
            mime_type=m.mime_type,
            source=m.source,
            created=datetime.fromtimestamp(m.created, UTC).isoformat(timespec="seconds"),
        )
        for m in metas
    ]
    if not infos:
        return ToolReply("No stored outputs in this session yet.", ListOutput(outputs=[]))
    lines = [f"{len(infos)} stored output(s), newest first:"]
    for m, info in zip(metas, infos, strict=True):
        label = f' "{m.name}"' if m.name else ""
        lines.append(f"{m.handle}{label} {m.kind}, {describe_size(m)}, created {info.created}")
    return ToolReply("\n".join(lines), ListOutput(outputs=infos))


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
            "Returns line numbers and character positions you can pass to read_large_output.\n"
            'Example: search_large_output(pattern="timeout|refused", handle="out_…", context_lines=2) → '
            '"out_…:4812 [chars 301220–301226]: … connection refused …".'
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


def _validation_message(spec: ToolSpec, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(spec.args.model_fields)
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
        return error_result(f"{exc}. {await _known_handles(call)}")
    except OffloadError as exc:
        return error_result(str(exc))
    except Exception:
        log.exception("tool %s failed", spec.name)
        return error_result(f"{spec.name} failed unexpectedly on the server; nothing was changed. Try again.")
    log.debug("tool %s took %.1f ms", spec.name, (time.perf_counter() - started) * 1000)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reply.text)],
        structured_content=reply.structured.model_dump(mode="json"),
    )
