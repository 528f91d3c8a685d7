"""The result models of the retrieval API: what `offload`, `read`, `search`, `query` and `list_outputs` return.

The same models are the in-process API's return values, what the compaction API renders and, over MCP, the
whole result programs find in a tool result's `_meta` (the model reads the text of `render.py`; tools.py says
why no tool sends them as `structuredContent`), so every front end reports an output with the same fields.
`facts_of` is the one place an `OutputMeta` becomes those fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from mcp_offload.store.base import OutputMeta


def _is_none(value: object) -> bool:
    """Optional extras that do not apply are left out, not sent as null (50 matches: ~2x cheaper to serialize and
    to read back). (Per field, not a model serializer: pydantic serializes 50 matches ~3x faster that way.)"""
    return value is None


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
    next_end: int | None = Field(default=None, description="When cut: the end of the rest of the range")
    next_mode: str | None = Field(
        default=None,
        description="When cut: the unit of next_start/next_end, 'lines' or 'chars' (chars when one line alone was "
        "over the cap: the rest of it and of the range by characters)",
    )


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
    json_path: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="JSON / JSON Lines outputs: jq path of the value the match is in (JSON Lines: within its record), "
        "usable as-is in query_large_output; absent for text outputs",
    )
    record: int | None = Field(
        default=None, exclude_if=_is_none, description="JSON Lines: 0-based number of the record holding the match"
    )
    breadcrumb: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Identifying fields (name, id, title, ...) of the objects holding the match",
    )


class SearchRecordOut(BaseModel):
    handle: str
    json_path: str = Field(description="jq path of the record (JSON Lines: '.', with its number in `record`)")
    record: int | None = Field(default=None, description="JSON Lines: the record's 0-based number")
    start: int = Field(description="First character of the record, 1-based inclusive")
    end: int = Field(description="Last character of the record, 1-based inclusive")
    start_line: int
    end_line: int
    matches: int = Field(description="How many of the returned matches fall in this record")
    text: str = Field(description="The record's exact stored text, cut at the read token cap when `truncated`")
    tokens: int
    truncated: bool
    next_start: int | None = Field(description="When cut: read_large_output(start=next_start, end=end) for the rest")


class RankedPassageOut(BaseModel):
    handle: str
    score: float = Field(description="BM25 score: higher is more relevant")
    start_line: int
    end_line: int
    start: int = Field(description="First character of the passage (1-based, inclusive)")
    end: int
    lines: list[ContextLine] = Field(description="The passage's best-matching lines, in order")
    json_path: str | None = Field(default=None, exclude_if=_is_none, description="JSON: jq path of the first hit")
    record: int | None = Field(default=None, exclude_if=_is_none, description="JSON Lines: the record's 0-based number")
    breadcrumb: str | None = Field(default=None, exclude_if=_is_none)


class SearchOutput(BaseModel):
    pattern: str
    matches: list[SearchMatchOut]
    total_matches: int
    total_is_exact: bool
    truncated: bool
    outputs_searched: int
    records: list[SearchRecordOut] | None = Field(
        default=None,
        exclude_if=_is_none,
        description='scope="record": the records holding the matches, each once; absent otherwise',
    )
    note: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description='What the search did otherwise than asked (scope="record" on a text output: its lines)',
    )
    passages: list[RankedPassageOut] | None = Field(
        default=None, exclude_if=_is_none, description="ranked=true: the best passages, best first; absent otherwise"
    )
    ranked_by: list[str] | None = Field(
        default=None, exclude_if=_is_none, description="ranked=true: the question's words that were ranked by"
    )


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


def facts_of(meta: OutputMeta) -> dict[str, Any]:
    """The `OutputFacts` fields of a stored output (shared by offload, list and the proxy's references)."""
    return {
        "handle": meta.handle,
        "name": meta.name,
        "kind": meta.kind,
        "bytes": meta.size,
        "chars": meta.chars,
        "lines": meta.lines,
        "tokens": meta.tokens,
        "tokens_estimated": meta.tokens_estimated,
        "mime_type": meta.mime_type,
    }


def info_of(meta: OutputMeta) -> OutputInfo:
    """One `list_outputs` row."""
    created = datetime.fromtimestamp(meta.created, UTC).isoformat(timespec="seconds")
    return OutputInfo(**facts_of(meta), source=meta.source, created=created)
