"""The result models of the retrieval API: what `offload`, `read`, `search`, `query` and `list_outputs` return.

The same models are the tools' `structuredContent` (and their declared `outputSchema`), the in-process API's
return values and what the compaction API renders, so every front end reports an output with the same fields.
`facts_of` is the one place an `OutputMeta` becomes those fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from mcp_offload.store.base import OutputMeta


def _is_none(value: object) -> bool:
    """Optional extras that do not apply are left out, not sent as null: a validating client checks every field of
    every match against the output schema, and absent optional fields cost it nothing (50 matches: ~2x cheaper).
    (Per field, not a model serializer: pydantic serializes 50 matches ~3x faster that way.)"""
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


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON Schema as the tools declare it (`outputSchema`): pydantic's, written so that it is cheaper to
    check, with the same meaning. A validating client (the MCP SDK checks every `structuredContent` with jsonschema)
    pays per subschema it enters: a `$ref` is one more (plus a lookup) for every match and context line, an `anyOf`
    of bare types (`str | None`) one more per optional field present. So each local `$ref` is replaced by the
    definition it names (no `$defs` left) and each such `anyOf` becomes one `type` list (`["string", "null"]`);
    titles, descriptions and defaults stay. 50 search matches validate ~25% faster (2 context lines: ~35%)."""
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})

    def shaped(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [shaped(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise TypeError(f"{model.__name__}: recursive definition {name} cannot be inlined")
            siblings = {key: value for key, value in node.items() if key != "$ref"}  # annotations on the field
            return shaped({**defs[name], **siblings}, (*seen, name))
        out = {key: shaped(value, seen) for key, value in node.items()}
        branches = out.get("anyOf")
        if isinstance(branches, list) and all(
            isinstance(b, dict) and b.keys() == {"type"} and isinstance(b["type"], str) for b in branches
        ):
            del out["anyOf"]
            out["type"] = [b["type"] for b in branches]
        return out

    result: dict[str, Any] = shaped(schema, ())
    return result


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
