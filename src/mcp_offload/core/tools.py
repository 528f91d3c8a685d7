"""The five tools as plain values: their arguments, handlers, descriptions and schemas, with no MCP in between.

A `ToolSpec` is what every front end shows a model (the MCP server's tool list, the Compactor's and the gateway's
injected tool definitions, the framework adapters) and what `pipeline.run_tool` runs. A handler validates nothing
itself (the pipeline does, against `args`), calls the in-process API (`outputs.py`) and renders its result
(`render.py`): the text the model reads, and the whole result model for programs. It raises the model-facing errors
(`OffloadError`) of the layers below; `pipeline.py` turns them into answers.

Tool and parameter names are a public contract.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_offload.core import outputs
from mcp_offload.core.answer_cap import UNCAPPED, AnswerCap
from mcp_offload.core.fit import fitted_read, fitted_reference, fitted_search, fitted_text
from mcp_offload.core.progress import ProgressFn
from mcp_offload.core.render import render_list, render_query
from mcp_offload.core.results import ListOutput, OffloadOutput, QueryOutput, ReadOutput, SearchOutput
from mcp_offload.core.services import Services
from mcp_offload.retrieve.sql.detect import is_sql


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
class CallContext:
    """What a tool handler gets besides its arguments: the shared services and the caller's session scope (not the
    model's tool call, `apis`' `ModelToolCall`: this is whose call it is)."""

    services: Services
    session: outputs.SessionScope  # whose outputs the call sees (its `.key` is the store's scope key)
    progress: ProgressFn | None = None  # set when the client asked for progress (sent a progress token)
    private_session: bool = False  # a stdio server's own session: outputs of other processes are not visible
    cap: AnswerCap = UNCAPPED  # what the calling client shows its model whole (mcp_server/client_caps.py)


@dataclass(frozen=True, slots=True)
class ToolReply:
    """A handler's answer: the text the model reads and the whole result model, for programs."""

    text: str
    result: BaseModel


Handler = Callable[[CallContext, Any], Awaitable[ToolReply]]


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


async def offload_tool(call: CallContext, args: OffloadArgs) -> ToolReply:
    out = await outputs.offload(
        call.services, call.session, args.content, name=args.name, source="offload", progress=call.progress
    )
    return ToolReply(await fitted_reference(call.services, out, call.cap), out)


async def read_tool(call: CallContext, args: ReadArgs) -> ToolReply:
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


async def search_tool(call: CallContext, args: SearchArgs) -> ToolReply:
    out = await outputs.search(
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


async def query_tool(call: CallContext, args: QueryArgs) -> ToolReply:
    out = await outputs.query(
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


async def list_tool(call: CallContext, args: NoArgs) -> ToolReply:
    out = await outputs.list_outputs(call.services, call.session)
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
            "whole order holding it, at .orders[57].\n"
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
