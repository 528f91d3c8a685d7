"""The public tools: validate arguments, call the services, answer in text (the model's) and `_meta` (programs').

What each tool answers costs the model what its text costs, in every client. Claude Code puts a result's
`structuredContent`, when there is one, into the model's context instead of the text (as compact JSON); other
clients show the text. So no tool sends `structuredContent` or declares an `outputSchema` (which would oblige it
to). Measured on real outputs (JSON, a git log, source code; o200k tokens), the structured form of every tool cost
more than its text: read 1.07-1.22x, search 1.27-2.2x, query 1.14-1.20x, offload 1.18-1.94x, list_outputs 1.26x.
It cannot be made lean: what these tools return is stored text (lines, records, jq output, preview lines), and in
JSON every quote, backslash and newline of it is escaped and every field is named once per hit or row; the text
says the same once, in the forms a model reads (`4812: …`, `lines 10–60 of 400`). The lean JSON that drops empty
and default fields still costs more than the text on every tool but list_outputs, and one rule for all tools is
simpler for clients than a mixed one.

Programs get the whole result model (`results.py`) under `_meta["mcp-offload/result"]` (`RESULT_META`): hosts
keep `_meta` from the model (Claude Code does; tests/clients checks it), as the OpenAI Apps SDK does for its
component-only data. The in-process API (`api.py`) returns the same models.

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
from mcp_offload.core.answer_cap import UNCAPPED, AnswerCap
from mcp_offload.core.fit import fitted_read, fitted_reference, fitted_search, fitted_text
from mcp_offload.core.progress import ProgressFn
from mcp_offload.core.render import render_list, render_query
from mcp_offload.core.results import ListOutput, OffloadOutput, QueryOutput, ReadOutput, SearchOutput
from mcp_offload.core.services import Services
from mcp_offload.errors import OffloadError, UnknownHandle
from mcp_offload.retrieve.sql.detect import is_sql

log = logging.getLogger(__name__)

RESULT_META = "mcp-offload/result"  # the `_meta` key of a tool's whole result model, for programs (never the model)


# -- arguments ------------------------------------------------------------------------------------------
class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown parameters are refused, strings are not capped here."""

    model_config = ConfigDict(extra="forbid", str_max_length=None)


class OffloadArgs(ToolArgs):
    content: str
    name: str | None = Field(default=None, description="label")


class ReadArgs(ToolArgs):
    handle: str
    start: int | None = None
    end: int | None = None
    start_line: int | None = None
    end_line: int | None = None


class SearchArgs(ToolArgs):
    pattern: str
    handle: str | None = None
    case_sensitive: bool = False
    literal: bool = False
    max_results: int | None = Field(default=None, ge=1)  # None: 50 matches, 5 ranked passages
    context_lines: int = Field(default=0, ge=0)
    # "scope" on the wire (not the session scope); "record": also the JSON record holding each match (the example)
    unit: Literal["line", "record"] = Field(default="line", alias="scope")
    ranked: bool = False


class QueryArgs(ToolArgs):
    handle: str
    query: str
    compact: bool = False
    raw: bool = False


class NoArgs(ToolArgs):
    pass


# -- the call context ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool handler gets besides its arguments: the shared services and the caller's session scope."""

    services: Services
    session: api.SessionScope  # whose outputs the call sees (its `.key` is the store's scope key)
    progress: ProgressFn | None = None  # set when the client asked for progress (sent a progress token)
    private_session: bool = False  # a stdio server's own session: outputs of other processes are not visible
    cap: AnswerCap = UNCAPPED  # what the calling client shows its model whole (server/client_caps.py)


@dataclass(frozen=True, slots=True)
class ToolReply:
    text: str
    result: BaseModel  # the whole result, for programs (`_meta`)


# A handler answers with a reply to shape, or with a whole result passed on as it is (a proxied upstream's).
Handler = Callable[[ToolCall, Any], Awaitable[ToolReply | types.CallToolResult]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args: type[ToolArgs]
    output: type[BaseModel]  # the result model (`_meta[RESULT_META]`)
    handler: Handler
    read_only: bool

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments as every tool list (MCP, the compactor's SDK formats) shows it to a model:
        pydantic's, without what a model does not need to call the tool right (every token of it is paid on every
        turn): titles, `null` branches, `null` / `false` / `0` defaults and an enum's first value as default (an
        optional argument is one left out), lower bounds and `additionalProperties` (the arguments model still checks
        them and refuses unknown arguments, naming the known ones). Types, enums, other defaults and descriptions
        stay."""
        schema = self.args.model_json_schema()
        properties: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            prop = {key: value for key, value in prop.items() if key != "title"}
            branches = prop.pop("anyOf", None)
            if branches is not None:
                kept = [b for b in branches if b != {"type": "null"}]
                prop = {**kept[0], **prop} if len(kept) == 1 else {"anyOf": kept, **prop}
            default = prop.get("default", ...)
            if default in (None, False, 0) or default == prop.get("enum", [...])[0]:
                prop.pop("default", None)
            prop.pop("minimum", None)
            properties[name] = prop
        shaped: dict[str, Any] = {"type": "object", "properties": properties}
        if schema.get("required"):
            shaped["required"] = schema["required"]
        return shaped

    def to_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema(),
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
    return ToolReply(await fitted_reference(call.services, out, call.cap), out)


async def read_tool(call: ToolCall, args: ReadArgs) -> ToolReply:
    text, out = await fitted_read(
        call.services,
        call.session,
        args.handle,
        call.cap,
        start=args.start,
        end=args.end,
        start_line=args.start_line,
        end_line=args.end_line,
    )
    return ToolReply(text, out)


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
        ranked=args.ranked,
    )
    return ToolReply(await fitted_search(call.services, call.session, out, args.handle, call.cap), out)


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
    text = render_query(out, call.services.settings.jq_max_output_chars, sql=is_sql(args.query))
    return ToolReply(await fitted_text(call.services, call.session, text, call.cap, "query answer"), out)


async def list_tool(call: ToolCall, args: NoArgs) -> ToolReply:
    out = await api.list_outputs(call.services, call.session)
    return ToolReply(await fitted_text(call.services, call.session, render_list(out), call.cap, "list"), out)


# The descriptions are paid on every turn of every conversation: each says once what tells the tool apart from the
# others (regex vs jq vs slices, one output or all, JSON paths) and keeps one example call with what it returns.
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="offload",
        title="Offload a large text",
        description=(
            "Store a large text (tool result, file, log, JSON) outside the context: returns a handle and a preview; "
            "then fetch only what you need with the *_large_output tools.\n"
            "Example: offload(content='<200 KB JSON>', name='issues') → out_… (json), its shape and working jq paths."
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
            "Read an exact slice of a stored output by lines or chars, 1-based inclusive; ~5,000 tokens a call at "
            "most, a cut answer says where to go on.\n"
            "Example: read_large_output(handle='out_…', start_line=120, end_line=160) → those 41 lines verbatim."
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
            "RE2 regex (\\w is ASCII, \\pL a letter) or literal search in one stored output, or all of this session's "
            "without handle: line numbers for read_large_output, in JSON jq paths for query_large_output; "
            "ranked=true: a question, answered by the best passages (BM25).\n"
            "Example: search_large_output(pattern='timeout|refused', handle='out_…', context_lines=2) → "
            "'4812: … connection refused …'\n"
            "Example: search_large_output(pattern='ord-1234', handle='out_…', literal=true, scope='record') → the "
            "match at .orders[57].id and that whole order.\n"
            "Example: search_large_output(pattern='why did payments time out?', ranked=true) → the best passages."
        ),
        args=SearchArgs,
        output=SearchOutput,
        handler=search_tool,
        read_only=True,
    ),
    ToolSpec(
        name="query_large_output",
        title="Query stored JSON with jq, or tables with SQL",
        description=(
            "jq on a stored JSON output (JSON Lines: each record; compact, raw: jq -c, -r), or SQL (DuckDB) on a "
            "CSV/TSV, JSON Lines or records output as table t.\n"
            "Example: query_large_output(handle='out_…', query='.items[] | select(.state == \"open\") | .title', "
            "raw=true) → one title per line.\n"
            "Example: query_large_output(handle='out_…', query='SELECT status, count(*) FROM t GROUP BY 1') → CSV."
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
            "List this session's stored outputs, newest first.\n"
            "Example: list_outputs() → 'out_… \"issues\" json, 204,800 bytes, …'"
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


def result_of(result: types.CallToolResult) -> dict[str, Any]:
    """The whole result model of one of our tools' results (`_meta[RESULT_META]`); {} for an error result."""
    found = (result.meta or {}).get(RESULT_META)
    return found if isinstance(found, dict) else {}


OTHER_PROCESS_HINT = (
    "This server has a private session: outputs stored by another mcp-offload process or an earlier run are not "
    "visible here. To share them, start every process with the same --session NAME (env MCP_OFFLOAD_SESSION; "
    "a Compactor: session=NAME)."
)


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
        hint = await api.known_handles(call.services, call.session)
        if call.private_session:
            hint += f" {OTHER_PROCESS_HINT}"
        return error_result(f"{exc}. {hint}")
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
        _meta={RESULT_META: reply.result.model_dump(mode="json")},
    )
