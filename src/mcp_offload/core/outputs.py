"""The in-process API: store an output and get it back, with no MCP in between.

Five plain async functions over the shared `Services` and a `SessionScope` (whose outputs to see), returning the result
models of `core/results.py`. They are the whole retrieval path: the tools (`core/tools.py`) validate
arguments and render these results as text, the proxy stores large upstream results through `offload`, and the
compaction API (`compact/`) stores tool results and answers the model's retrieval calls through the same functions.

    from mcp_offload import SessionScope, Settings, build_services, offload, query, search   # the public names

    services = build_services(Settings())
    scope = SessionScope.named("my-agent")                 # or SessionScope.new() for a private one
    stored = await offload(services, scope, big_json, name="issues")
    hits = await search(services, scope, "timeout", handle=stored.handle)
    rows = await query(services, scope, stored.handle, ".items | length")
    await services.aclose()

Errors are `OffloadError`s (`errors.py`) whose message is written for a model; nothing is stored or changed when
one is raised.
"""

from __future__ import annotations

import secrets
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from typing import Literal

import anyio

from mcp_offload.core.ingest import ingest_blob, ingest_text
from mcp_offload.core.progress import ProgressFn, heartbeat
from mcp_offload.core.results import (
    ContextLine,
    ListOutput,
    OffloadOutput,
    QueryOutput,
    RankedPassageOut,
    ReadOutput,
    SearchMatchOut,
    SearchOutput,
    SearchRecordOut,
    info_of,
)
from mcp_offload.core.services import Services
from mcp_offload.errors import ExpiredHandle, NotEnumerable, SearchError, UnknownHandle
from mcp_offload.retrieve.json_hits import JsonHits, json_hits, records_note
from mcp_offload.retrieve.json_structure_file import SIDECAR as STRUCTURE_SIDECAR
from mcp_offload.retrieve.pattern import compile_pattern
from mcp_offload.retrieve.ranked.index_cache import SIDECAR
from mcp_offload.retrieve.ranked.rank import RankedResult, rank_outputs
from mcp_offload.retrieve.read import read_range
from mcp_offload.retrieve.search import SearchOptions, SearchResult, search_output, search_outputs
from mcp_offload.retrieve.sql.detect import is_sql
from mcp_offload.store.base import StoredOutput
from mcp_offload.store.handles import scope_key, validate_handle

NOT_ENUMERABLE = (
    "this connection has no session identity (2026-07-28 request without authentication), so outputs cannot be "
    "listed or searched all at once; pass the handle you were given."
)


@dataclass(frozen=True, slots=True)
class SessionScope:
    """Whose outputs a call sees: a store scope key, and whether its outputs may be enumerated (listed, searched
    without a handle). Keys are hashes of a session identity, so a store never sees the identity itself."""

    key: str
    enumerable: bool = True

    @classmethod
    def new(cls) -> SessionScope:
        """A private scope nobody else can name (one stdio server run, one compactor without a session name)."""
        return cls(scope_key("run:" + secrets.token_hex(16)))

    @classmethod
    def named(cls, session: str) -> SessionScope:
        """The scope of a named session: every process that names the same session on the same store shares it
        (`mcp-offload --session NAME`, `Compactor(session=NAME)`)."""
        if not session or len(session) > 200 or not session.isprintable():
            raise ValueError("a session name is 1-200 printable characters")
        return cls(scope_key("session-name:" + session))


async def offload(
    services: Services,
    scope: SessionScope,
    content: str,
    *,
    name: str | None = None,
    source: str | None = "offload",
    progress: ProgressFn | None = None,
    handle: str | None = None,
) -> OffloadOutput:
    """Store a text (JSON and JSON Lines are detected) and return its facts and the preview a model sees.

    `handle`: store under this handle (a `store.handles.derived_handle`) instead of a fresh one; idempotent when
    that handle is already stored in the scope."""
    async with heartbeat(progress, f"storing {len(content):,} characters"):
        ingested = await ingest_text(services, scope.key, content, name=name, source=source, handle=handle)
    return ingested.output()


async def offload_bytes(
    services: Services,
    scope: SessionScope,
    data: bytes,
    *,
    mime_type: str | None,
    name: str | None = None,
    source: str | None = None,
    handle: str | None = None,
) -> OffloadOutput:
    """Store binary content (an image, audio) as a blob: kept byte-exact, described by type and size only.
    `handle`: as for `offload` (a derived handle, idempotent)."""
    ingested = await ingest_blob(
        services, scope.key, data, mime_type=mime_type, name=name, source=source, handle=handle
    )
    return ingested.output()


async def read(
    services: Services,
    scope: SessionScope,
    handle: str,
    *,
    start: int | None = None,
    end: int | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    max_tokens: int | None = None,
    max_bytes: int | None = None,
) -> ReadOutput:
    """An exact slice by 1-based inclusive characters or lines, cut at `settings.read_max_tokens` (or the smaller
    `max_tokens`) and at `max_bytes` bytes when given (a client's own cap, `core/fit.py`)."""
    handle = validate_handle(handle)
    cap = services.settings.read_max_tokens
    if max_tokens is not None:
        cap = min(cap, max_tokens)
    async with services.store.open(scope.key, handle) as output:
        result = await anyio.to_thread.run_sync(
            lambda: read_range(
                output,
                start=start,
                end=end,
                start_line=start_line,
                end_line=end_line,
                max_tokens=cap,
                counter=services.tokens,
                max_bytes=max_bytes,
            )
        )
    return ReadOutput(handle=handle, **asdict(result))  # the engine's result, field for field


async def search(
    services: Services,
    scope: SessionScope,
    pattern: str,
    *,
    handle: str | None = None,
    case_sensitive: bool = False,
    literal: bool = False,
    max_results: int | None = None,
    context_lines: int = 0,
    progress: ProgressFn | None = None,
    unit: Literal["line", "record"] = "line",
    ranked: bool = False,
) -> SearchOutput:
    """RE2 (or literal) search in one output, or in all of the scope's text outputs when `handle` is None.

    Matches in JSON / JSON Lines outputs carry their jq path and breadcrumb. `unit="record"` (the tool's
    `scope` argument) also returns the record holding each match (JSON: the element of the outermost array on its path;
    JSON Lines: its line), once per record, all together cut at `settings.read_max_tokens`.

    `ranked=True`: `pattern` is a natural-language question; the result's `passages` are the best passages for it
    (BM25 over each output's passage index, `retrieve/ranked/`), `max_results` of them (default 5, at most 20)."""
    if ranked:
        if unit != "line":
            raise SearchError(
                'scope="record" does not combine with ranked=true: each passage already gives its jq path; fetch the '
                "record with query_large_output."
            )
        return await _search_ranked(services, scope, pattern, handle, max_results, progress)
    if max_results is None:
        max_results = 50
    if unit not in ("line", "record"):
        raise SearchError('scope must be "line" (matching lines) or "record" (the JSON records holding them).')
    settings = services.settings
    compiled = compile_pattern(
        pattern, literal=literal, case_sensitive=case_sensitive, max_chars=settings.search_max_pattern_chars
    )
    options = SearchOptions(
        case_sensitive=case_sensitive,
        literal=literal,
        max_results=min(max_results, settings.search_max_results_cap),
        context_lines=context_lines,
        line_chars=settings.search_line_chars,
        time_budget_s=settings.search_time_budget_s,
    )
    handles = await _searched_handles(services, scope, handle)
    async with AsyncExitStack() as stack:
        outputs = await _open_all(services, scope, stack, handles, strict=handle is not None)
        records = unit == "record"
        # a text output asked for records answers with its lines and says why: no refusal costing a round trip
        note = records_note(outputs[0]) if records and handle is not None else None
        records = records and note is None

        def run() -> tuple[SearchResult, JsonHits]:
            cap = settings.search_max_results_cap
            if handle is not None:  # one output: a binary one is refused, not searched as no match
                found = search_output(outputs[0], compiled, options, max_results_cap=cap)
            else:
                found = search_outputs(outputs, compiled, options, max_results_cap=cap)
            placed = json_hits(
                {o.meta.handle: o for o in outputs},
                found.matches,
                records=records,
                max_tokens=settings.read_max_tokens,
                counter=services.tokens,
                sidecars={
                    h: services.store.sidecar(scope.key, h, STRUCTURE_SIDECAR)
                    for h in {m.handle for m in found.matches}
                },
            )
            return found, placed

        async with heartbeat(None if handle else progress, f"searching {len(outputs)} output(s)"):
            result, hits = await anyio.to_thread.run_sync(run)
    return SearchOutput(
        pattern=pattern,
        matches=[
            SearchMatchOut(
                handle=m.handle,
                line=m.line,
                start=m.start,
                end=m.end,
                text=m.text,
                before=[ContextLine(line=number, text=text) for number, text in m.before],
                after=[ContextLine(line=number, text=text) for number, text in m.after],
                json_path=place.json_path if place else None,
                record=place.record if place else None,
                breadcrumb=place.breadcrumb if place else None,
            )
            for m, place in zip(result.matches, hits.places, strict=True)
        ],
        total_matches=result.total_matches,
        total_is_exact=result.total_is_exact,
        truncated=result.truncated,
        outputs_searched=result.outputs_searched,
        records=[SearchRecordOut(**asdict(r)) for r in hits.records] if records else None,
        note=note,
    )


async def _search_ranked(
    services: Services,
    scope: SessionScope,
    question: str,
    handle: str | None,
    max_results: int | None,
    progress: ProgressFn | None,
) -> SearchOutput:
    settings = services.settings
    handles = await _searched_handles(services, scope, handle)
    async with AsyncExitStack() as stack:
        outputs = await _open_all(services, scope, stack, handles, strict=handle is not None)

        def run() -> RankedResult:
            return rank_outputs(
                outputs,
                question,
                k=5 if max_results is None else max_results,
                line_chars=settings.search_line_chars,
                counter=services.tokens,
                max_tokens=settings.read_max_tokens,
                sidecars=lambda handle: services.store.sidecar(scope.key, handle, SIDECAR),
            )

        async with heartbeat(progress, f"ranking passages of {len(outputs)} output(s)"):
            result = await anyio.to_thread.run_sync(run)
    return SearchOutput(
        pattern=question,
        matches=[],
        total_matches=len(result.passages),
        total_is_exact=False,
        truncated=False,
        outputs_searched=result.outputs_searched,
        passages=[
            RankedPassageOut(
                handle=p.handle,
                score=p.score,
                start_line=p.start_line,
                end_line=p.end_line,
                start=p.start,
                end=p.end,
                lines=[ContextLine(line=line.line, text=line.text) for line in p.lines],
                json_path=p.place.json_path if p.place else None,
                record=p.place.record if p.place else None,
                breadcrumb=p.place.breadcrumb if p.place else None,
            )
            for p in result.passages
        ],
        ranked_by=list(result.terms),
    )


async def _searched_handles(services: Services, scope: SessionScope, handle: str | None) -> list[str]:
    """The handle asked for (validated; an unknown one raises when opened), or all of the scope's text outputs."""
    if handle is not None:
        return [validate_handle(handle)]
    if not scope.enumerable:
        raise SearchError("search_large_output needs a handle here: " + NOT_ENUMERABLE)
    return [m.handle for m in await services.store.list(scope.key) if m.kind != "blob"]


async def _open_all(
    services: Services, scope: SessionScope, stack: AsyncExitStack, handles: list[str], *, strict: bool
) -> list[StoredOutput]:
    """Open every handle for the scope; outputs that expired meanwhile are skipped unless `strict`."""
    outputs = []
    for h in handles:
        try:
            outputs.append(await stack.enter_async_context(services.store.open(scope.key, h)))
        except (UnknownHandle, ExpiredHandle):
            if strict:
                raise
    return outputs


async def query(
    services: Services,
    scope: SessionScope,
    handle: str,
    program: str,
    *,
    compact: bool = False,
    raw: bool = False,
    progress: ProgressFn | None = None,
) -> QueryOutput:
    """Run a jq program over a stored JSON (JSON Lines: over each record) output, sandboxed and capped; or, when
    `program` is SQL (starts with SELECT, WITH, FROM, ...: `retrieve/sql/detect.py`), a DuckDB query over a CSV/TSV,
    JSON Lines or JSON-records output exposed as table `t`, sandboxed and capped alike."""
    handle = validate_handle(handle)
    if is_sql(program):
        async with services.store.open(scope.key, handle) as output:
            message = f"running SQL over {output.meta.size:,} bytes"
            async with heartbeat(progress, message, total=services.settings.jq_timeout_s):
                found = await services.sql.run(output, program)
        return QueryOutput(
            handle=handle,
            result=found.text,
            results=found.rows,
            truncated=found.truncated,
            elapsed_ms=round(found.elapsed_s * 1000, 3),
        )
    async with services.store.open(scope.key, handle) as output:
        message = f"running jq over {output.meta.size:,} bytes"
        async with heartbeat(progress, message, total=services.settings.jq_timeout_s):
            result = await services.jq.run(output, program, compact=compact, raw=raw)
    return QueryOutput(
        handle=handle,
        result=result.text,
        results=result.results,
        truncated=result.truncated,
        elapsed_ms=round(result.elapsed_s * 1000, 3),
    )


async def list_outputs(services: Services, scope: SessionScope) -> ListOutput:
    """The scope's outputs, newest first."""
    if not scope.enumerable:
        raise NotEnumerable("list_outputs is unavailable: " + NOT_ENUMERABLE)
    return ListOutput(outputs=[info_of(meta) for meta in await services.store.list(scope.key)])


async def known_handles(services: Services, scope: SessionScope) -> str:
    """A hint for a model that named an unknown handle: the scope's handles, or what to do instead."""
    if not scope.enumerable:
        return "Check the handle you were given."
    metas = await services.store.list(scope.key)
    if not metas:
        return "This session has no stored outputs yet."
    shown = ", ".join(m.handle + (f" ({m.name})" if m.name else "") for m in metas[:10])
    more = f" and {len(metas) - 10} more (see list_outputs)" if len(metas) > 10 else ""
    return f"This session's outputs: {shown}{more}."
