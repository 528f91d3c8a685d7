"""The model-facing text of each result: what a model reads back from the tools, the proxy and the compactor.

Each function turns one result model (`core/results.py`) into the short text a model sees; the same text serves the
tools (`core/tools.py`, for every front end), the proxy's references to offloaded upstream results and the compaction
API, so a model meets one wording whichever front end stored or retrieved the output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_offload.core.output_uri import uri_of
from mcp_offload.core.results import (
    ListOutput,
    OffloadOutput,
    OutputFacts,
    QueryOutput,
    ReadOutput,
    SearchMatchOut,
    SearchOutput,
    SearchRecordOut,
)
from mcp_offload.retrieve.positions import was_cut

_RETRIEVE = "Retrieve with read_large_output (char or line ranges), search_large_output (regex)"


def query_languages(kind: str, shape: Mapping[str, Any]) -> str | None:
    """What query_large_output runs on an output of `kind` whose preview summary is `shape`, or None: jq on JSON
    (JSON Lines: per record), SQL over table t on a table (CSV/TSV), JSON Lines of objects and JSON arrays of
    objects. A footer names only what works, not jq under a CSV's SQL ready calls."""
    if kind == "json":
        records = shape.get("type") == "array" and shape.get("element") == "object"
        return "jq, or SQL over table t: a row per element" if records else "jq"
    if kind == "jsonl":
        return "jq per record, or SQL over table t" if shape.get("record_type") == "object" else "jq per record"
    if kind == "text" and shape.get("type") == "table":
        return "SQL over table t"
    return None


def retrieve_hint(out: OffloadOutput) -> str:
    """The footer of a reference: the tools that work on this output, with the query languages that do."""
    languages = query_languages(out.kind, out.shape)
    return f"{_RETRIEVE}, query_large_output ({languages})." if languages else f"{_RETRIEVE}."


def n(value: int) -> str:
    """A count as people write it: 12,345."""
    return f"{value:,}"


def describe_size(facts: OutputFacts) -> str:
    """'274,590 bytes, 274,590 chars, 8,574 lines, ~70,541 tokens' (blobs: bytes and type)."""
    if facts.kind == "blob":
        return f"{facts.bytes:,} bytes, {facts.mime_type or 'binary'}"
    approx = "~" if facts.tokens_estimated else ""
    return f"{facts.bytes:,} bytes, {facts.chars:,} chars, {facts.lines:,} lines, {approx}{facts.tokens:,} tokens"


def render_reference(out: OffloadOutput, *, named: bool = True) -> str:
    """The text the model sees instead of a stored output: handle, sizes, notes, preview, how to retrieve.
    `named=False`: without the output's name (the proxy's answer to the call the name is made of: the model just
    wrote it)."""
    if out.kind == "blob":
        return (
            f"Stored as {out.handle} (binary; {describe_size(out)}). It is not text: read it whole as the resource "
            f"{uri_of(out.handle)}."
        )
    label = f' "{out.name}"' if out.name and named else ""
    lines = [
        f"Stored as {out.handle}{label} ({out.kind}; {describe_size(out)}).",
        *(f"Note: {note}" for note in out.notes),
        out.preview,
        retrieve_hint(out),
    ]
    return "\n".join(line for line in lines if line)


def read_call(handle: str, mode: str, start: int, end: int) -> str:
    """The exact call that reads a range: "read_large_output(handle='out_…', start_line=815, end_line=2000)"."""
    first, last = ("start_line", "end_line") if mode == "lines" else ("start", "end")
    return f"read_large_output(handle={handle!r}, {first}={start}, {last}={end})"


def render_read(out: ReadOutput, cap_label: str) -> str:
    """`cap_label`: the cap a cut read was cut at, as the model reads it ("the 5,000-token cap")."""
    unit = "lines" if out.mode == "lines" else "chars"
    # Not the handle (the model just named it) nor the token count (it is reading them): ~17 tokens a read, most of
    # a one-line lookup's answer.
    head = f"[{unit} {n(out.start)}–{n(out.end)} of {n(out.total)}]"
    tail = []
    if out.note:
        tail.append(f"[{out.note}]")
    if out.next_start is not None:
        end = out.total if out.next_end is None else out.next_end
        call = read_call(out.handle, out.next_mode or out.mode, out.next_start, end)
        tail.append(f"[cut at {cap_label}: continue with {call}]")
    return "\n".join([head, out.text, *tail]) if tail else f"{head}\n{out.text}"


def search_blocks(out: SearchOutput, scoped: str | None) -> list[list[str]]:
    """The lines of a search answer in blocks: the header, then one block per hit (scope="record": per record, with
    the hits in it), then what follows them (the note on more matches). An answer cut to fit a client's cap ends at
    a block's end."""
    return [lines for lines, _ in search_layout(out, scoped)]


def search_layout(out: SearchOutput, scoped: str | None) -> list[tuple[list[str], int]]:
    """`search_blocks` with how many hits each block shows."""
    where = scoped or f"{out.outputs_searched} output(s)"
    if out.passages is not None:
        return [([line], 0) for line in _render_passages(out, where, scoped).split("\n")]
    total = n(out.total_matches) + ("" if out.total_is_exact else "+")
    note = [out.note] if out.note else []
    if not out.matches:
        return [([f"No match for {out.pattern!r} in {where}.", *note], 0)]
    held, loose = _by_record(out)
    rest = _after_hits(out)
    if len(held) == 1 and not loose and not note and not rest and _all_shown(out):
        record, hits = held[0]  # the whole answer is one record: its place is the header
        return [(_record_block(record, hits, scoped, alone=True), len(hits))]
    if held:
        head = f"{total} match(es) for {out.pattern!r} in {where}; showing {len(out.matches)}, "
        head += f"in {len(held)} record(s)" + (f" and {len(loose)} line(s) outside them:" if loose else ":")
    else:
        head = f"{total} match(es) for {out.pattern!r} in {where}; showing {len(out.matches)}:"
    blocks: list[tuple[list[str], int]] = [([head, *note], 0)]
    blocks += [(_record_block(r, hits, scoped), len(hits)) for r, hits in held]
    blocks += [(_match_block(m, scoped), 1) for m in loose]
    if rest:
        blocks.append((rest, 0))
    return blocks


def _all_shown(out: SearchOutput) -> bool:
    """Every match there is, is in the answer: the count says nothing the hits do not."""
    return out.total_is_exact and not out.truncated and out.total_matches == len(out.matches)


def _after_hits(out: SearchOutput) -> list[str]:
    """What follows the hits: more matches not shown, no record for them, records past the read cap."""
    rest = []
    if out.truncated:
        rest.append("[more matches not shown: raise max_results or narrow the pattern]")
    if out.records is not None and not out.records:
        rest.append("No JSON record holds these matches (records apply to JSON and JSON Lines outputs only).")
    for r in out.records or ():
        if not r.text:  # past the read token cap: where it is, and the call that reads it
            where = f"record {r.record}" if r.record is not None else r.json_path
            call = read_call(r.handle, "chars", r.start, r.end)
            rest.append(f"── {r.handle} {where} [lines {n(r.start_line)}–{n(r.end_line)}] not shown (read cap): {call}")
    return rest


def _match_block(m: SearchMatchOut, scoped: str | None) -> list[str]:
    # One output searched: its handle is in the first line, not on every hit (as rg names no file for one file);
    # it cost ~30 % of a 50-hit result's tokens. Across outputs each line names its output.
    prefix = "" if scoped else f"{m.handle}:"
    lines = [f"  {prefix}{c.line}-  {c.text}" for c in m.before]
    # Character positions only where the line number cannot read the hit: its line was cut (a minified JSON, a huge
    # log line). Elsewhere they cost ~8 tokens a hit (~25 % of a 50-hit answer) and say nothing more.
    chars = f" [chars {m.start}–{m.end}]" if was_cut(m.text) else ""
    lines.append(f"{prefix}{m.line}{chars}: {m.text}")
    if m.json_path is not None:
        lines.append(_json_place(m))
    lines.extend(f"  {prefix}{c.line}-  {c.text}" for c in m.after)
    return lines


def _by_record(out: SearchOutput) -> tuple[list[tuple[SearchRecordOut, list[SearchMatchOut]]], list[SearchMatchOut]]:
    """scope="record": each record whose text is shown, with the hits inside it (shown once, in the record), and
    the hits in no shown record (a text output's, or past the read cap), shown as lines."""
    shown = [r for r in out.records or () if r.text]
    held: dict[int, list[SearchMatchOut]] = {}
    loose: list[SearchMatchOut] = []
    for m in out.matches:
        at = next((i for i, r in enumerate(shown) if r.handle == m.handle and r.start <= m.start <= r.end), None)
        if at is None:
            loose.append(m)
        else:
            held.setdefault(at, []).append(m)
    return [(shown[i], hits) for i, hits in sorted(held.items())], loose


_HITS_NAMED = 5  # a record's header names where its first hits are; the record itself shows them all


def _record_block(
    r: SearchRecordOut, hits: list[SearchMatchOut], scoped: str | None, *, alone: bool = False
) -> list[str]:
    """A record and where it is: its path (JSON Lines: its number) and lines, its characters only where lines cannot
    read it back (a record on part of one line: minified JSON), and, among several records, where its hits are.
    `alone`: the answer's only record, holding every match: nothing but its place, as the answer's first line (as
    with a read, not the handle the model just named in its call)."""
    owner = "" if scoped else f"{r.handle} "
    where = f"record {r.record}" if r.record is not None else r.json_path
    span = f"lines {n(r.start_line)}–{n(r.end_line)}" if r.end_line > r.start_line else f"line {n(r.start_line)}"
    if r.start_line == r.end_line and r.record is None:
        span += f", chars {r.start}–{r.end}"
    if alone:
        lines = [f"{owner}{where} [{span}]:"]
    else:
        places = ", ".join(
            f"{m.json_path} (line {n(m.line)})" if m.json_path else f"line {n(m.line)}" for m in hits[:_HITS_NAMED]
        )
        more = f", … ({len(hits)})" if len(hits) > _HITS_NAMED else ""
        lines = [f"── {owner}{where} [{span}] · {plural_hits(len(hits))} at {places}{more}:"]
    lines.append(record_text(r.text))
    if r.truncated:
        lines.append(
            f"[record cut at the read token cap: read the rest with read_large_output(handle={r.handle!r}, "
            f"start={r.next_start}, end={r.end})]"
        )
    return lines


_ONE_LINE_CHARS = 1_500  # a record up to this long is shown on one line; a longer one keeps its lines


def record_text(record: str) -> str:
    """A JSON record's text as a search answer shows it: on one line when that is at most _ONE_LINE_CHARS long (each
    line's indentation and line break dropped), else its lines without the indentation they all share.

    A JSON string holds no raw line break, so every break and the whitespace around it lie between tokens: the value
    is unchanged, and every line's own text is kept as it is stored, so a piece of it copied into a literal search
    finds it again (which `"a":1` for a stored `"a": 1` would not). A pretty-printed record costs about a third fewer
    tokens on one line; the ~20-token lookup of one order is most of what the model reads back."""
    if "\n" not in record:
        return record
    lines = record.split("\n")  # not splitlines(): U+2028 and the like may stand raw inside a string
    last = len(lines) - 1  # a record cut at the read cap may end inside a string: its end is kept as it is
    joined = "".join(
        line.rstrip(" \t\r") if i == 0 else line.strip(" \t\r") if i < last else line.lstrip(" \t\r")
        for i, line in enumerate(lines)
    )
    if len(joined) <= _ONE_LINE_CHARS:
        return joined
    # the first line starts at the record (no indentation); the others carry its depth in the output
    shared = min((len(line) - len(line.lstrip(" \t")) for line in lines[1:] if line.strip(" \t\r")), default=0)
    return "\n".join([lines[0], *(line[shared:] for line in lines[1:])])


def plural_hits(count: int) -> str:
    return "1 match" if count == 1 else f"{n(count)} matches"


def _render_passages(out: SearchOutput, where: str, scoped: str | None) -> str:
    """Ranked search: one block per passage, best first; a passage's shown lines carry their line numbers."""
    words = ", ".join(out.ranked_by or ())
    if not out.passages:
        return f"No passage in {where} mentions {words} (from {out.pattern!r})."
    lines = [f"{len(out.passages)} best passage(s) for {out.pattern!r} in {where} (ranked by: {words}):"]
    for rank, p in enumerate(out.passages, 1):
        owner = "" if scoped else f"{p.handle} "
        span = f"lines {n(p.start_line)}–{n(p.end_line)}" if p.end_line > p.start_line else f"line {n(p.start_line)}"
        lines.append(f"#{rank} {owner}{span} [chars {p.start}–{p.end}] score {p.score:.1f}")
        lines.extend(f"  {c.line}: {c.text}" for c in p.lines)
        if p.json_path is not None:
            at = f"record {p.record}: {p.json_path}" if p.record is not None else p.json_path
            lines.append(f"  at {at}" + (f" ({p.breadcrumb})" if p.breadcrumb else ""))
    return "\n".join(lines)


def _json_place(m: SearchMatchOut) -> str:
    """'  at .[77].children[0].name (pkg077 › src › plan.md)'; JSON Lines: 'at record 12: .user.login'."""
    where = f"record {m.record}: {m.json_path}" if m.record is not None else m.json_path
    return f"  at {where}" + (f" ({m.breadcrumb})" if m.breadcrumb else "")


def render_query(out: QueryOutput, max_output_chars: int, *, sql: bool = False) -> str:
    text = out.result if out.result else "(no output)"
    if sql:
        rows = f"{n(out.results)} row(s)"
        if out.truncated:
            cut = f"output cut at {n(max_output_chars)} chars after {rows}"
            return text + f"\n[{cut}: add a LIMIT, aggregate or select fewer columns]"
        return text + f"\n({rows})"
    if out.truncated:
        text += (
            f"\n[output cut at {n(max_output_chars)} chars after {out.results} "
            "result(s): narrow the query, e.g. add '| length', 'limit(10; …)' or select fewer fields]"
        )
    return text


def render_list(out: ListOutput) -> str:
    if not out.outputs:
        return "No stored outputs in this session yet."
    lines = [f"{len(out.outputs)} stored output(s), newest first:"]
    for info in out.outputs:
        label = f' "{info.name}"' if info.name else ""
        lines.append(f"{info.handle}{label} {info.kind}, {describe_size(info)}, created {info.created}")
    return "\n".join(lines)
