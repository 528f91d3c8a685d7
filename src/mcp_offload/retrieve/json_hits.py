"""JSON-aware search results: the jq path and breadcrumb of each hit, and the records that hold them.

Runs after a search has found its matches (`search.py` is not involved in how they are found): for every match
in a JSON or JSON Lines output it locates the match's first byte in the document (`json_locate.py`, from the
output's cached structure index, `json_structure.py`), at O(interval + depth) per hit. With records wanted, it
also returns the record around each hit (de-duplicated: several hits in one record give it once), its exact
stored text read through `read_range`, all records together cut at the read token cap; a cut record says where
to continue by character range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp_offload.retrieve.json_locate import breadcrumb, jq_path, locate, record_of
from mcp_offload.retrieve.json_structure import JsonStructure, structure_of
from mcp_offload.retrieve.positions import Match
from mcp_offload.retrieve.read import read_range
from mcp_offload.store.base import OutputSidecar, StoredOutput
from mcp_offload.store.content_index import Buffer
from mcp_offload.tokens import TokenCounter

JSON_KINDS = ("json", "jsonl")
MIN_RECORD_TOKENS = 20  # below this much budget left, a record is listed by its range only


@dataclass(frozen=True, slots=True)
class HitPlace:
    """Where one match is in its JSON document."""

    json_path: str  # a jq path (JSON Lines: within the record)
    record: int | None  # JSON Lines: the record's 0-based number
    breadcrumb: str | None


@dataclass(frozen=True, slots=True)
class FoundRecord:
    """One record that holds at least one match: where it is, and its stored text (possibly cut)."""

    handle: str
    json_path: str
    record: int | None
    start: int  # 1-based inclusive characters of the whole record
    end: int
    start_line: int
    end_line: int
    matches: int  # how many of the returned matches fall in it
    text: str
    tokens: int
    truncated: bool
    next_start: int | None  # where to continue with read_large_output(start=...) when cut


@dataclass(frozen=True, slots=True)
class JsonHits:
    places: tuple[HitPlace | None, ...]  # one per match, None for text outputs
    records: tuple[FoundRecord, ...]


class _Document:
    """One output's bytes and structure index, opened once per search."""

    def __init__(self, output: StoredOutput, sidecar: OutputSidecar | None = None) -> None:
        self.output = output
        data = output.contiguous()
        self.data: Buffer = data
        self.lines = output.meta.kind == "jsonl"
        self.structure: JsonStructure = structure_of(output.meta.handle, output.meta.created, data, sidecar)
        self.names: dict[int, str | None] = {}  # breadcrumb entries by object opener


def records_note(output: StoredOutput) -> str | None:
    """Why scope="record" gives lines for this output (not JSON or JSON Lines), or None when records apply."""
    if output.meta.kind in JSON_KINDS:
        return None
    return (
        f'scope="record" applies to JSON and JSON Lines outputs only; {output.meta.handle} is {output.meta.kind}, '
        "so these are its matching lines (read around one with read_large_output)."
    )


def json_hits(
    outputs: Mapping[str, StoredOutput],
    matches: Sequence[Match],
    *,
    records: bool,
    max_tokens: int,
    counter: TokenCounter,
    sidecars: Mapping[str, OutputSidecar | None] | None = None,
) -> JsonHits:
    """Paths and breadcrumbs for `matches` (and their records when `records`). Sync: run it in a worker thread.
    `sidecars`: where each output's structure index is kept (by handle), so another process's build is reused."""
    documents: dict[str, _Document] = {}
    places: list[HitPlace | None] = []
    spans: dict[tuple[str, int, int], list[int]] = {}  # (handle, start byte, end byte) -> [matches, path...]
    paths: dict[tuple[str, int, int], tuple[str, int | None]] = {}
    for match in matches:
        output = outputs.get(match.handle)
        if output is None or output.meta.kind not in JSON_KINDS:
            places.append(None)
            continue
        doc = documents.get(match.handle)
        if doc is None:
            doc = documents[match.handle] = _Document(output, (sidecars or {}).get(match.handle))
        byte = output.index.byte_of_char(doc.data, match.start - 1)
        place = locate(doc.structure, doc.data, byte, lines=doc.lines)
        places.append(HitPlace(jq_path(place.path), place.record, breadcrumb(doc.data, place.stack, doc.names)))
        if not records:
            continue
        span = record_of(doc.structure, doc.data, place, lines=doc.lines)
        if span is None:
            continue
        key = (match.handle, span.start, span.end)
        if key in spans:
            spans[key][0] += 1
        else:
            spans[key] = [1]
            paths[key] = (jq_path(span.path), span.record)
    found: list[FoundRecord] = []
    budget = max_tokens
    for key, (count, *_) in spans.items():
        handle, start, end = key
        doc = documents[handle]
        path, record = paths[key]
        found.append(_read_record(doc, start, end, path, record, count, budget, counter))
        budget -= found[-1].tokens
    return JsonHits(tuple(places), tuple(found))


def _read_record(
    doc: _Document, start: int, end: int, path: str, record: int | None, count: int, budget: int, counter: TokenCounter
) -> FoundRecord:
    index, data = doc.output.index, doc.data
    first = index.char_of_byte(data, start) + 1
    last = index.char_of_byte(data, end)
    lines = (index.line_of_byte(data, start), index.line_of_byte(data, max(start, end - 1)))
    if budget < MIN_RECORD_TOKENS or last < first:
        return FoundRecord(
            doc.output.meta.handle, path, record, first, last, *lines, count, "", 0, last >= first, first
        )
    got = read_range(doc.output, start=first, end=last, max_tokens=budget, counter=counter)
    return FoundRecord(
        doc.output.meta.handle,
        path,
        record,
        first,
        last,
        *lines,
        count,
        got.text,
        got.tokens,
        got.truncated,
        got.next_start,
    )
