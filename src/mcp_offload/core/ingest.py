"""Ingest: where an output goes: content → (kind, tokens, index, preview) → store.

The one path for storing (`ingest_text`, `ingest_blob`), behind `outputs.offload`, which the `offload` tool, the
proxy (for large upstream results) and the compactor call. All CPU work (encoding, indexing, parsing, counting:
`prepare_text`) runs off the event loop: a big output's in a worker process of `ingest_pool` (so it does not hold
the serving process's GIL either), a small one's in a thread. A big output's bytes are written to the store
(`Store.stage`: the filesystem store's content file, written and fsynced by a thread) while the rest is prepared, so
`put` only adds the metadata and publishes.

`model_preview` is the one rule for the preview the model sees; `mcp-offload outputs show` rebuilds a stored
output's preview with it (`stored_preview`), so it shows what the model saw.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio

from mcp_offload.core.results import OffloadOutput, facts_of
from mcp_offload.core.services import Services
from mcp_offload.errors import HandleExists, InvalidContent, TooLarge
from mcp_offload.preview import Preview, build_preview
from mcp_offload.preview.kinds import detect_kind, free_later, gc_paused
from mcp_offload.retrieve.json_structure import warm_structure
from mcp_offload.retrieve.json_structure_file import SIDECAR as STRUCTURE_SIDECAR
from mcp_offload.retrieve.ranked.index_cache import SIDECAR, offload_in_progress, warm_index
from mcp_offload.settings import Settings
from mcp_offload.store.base import Kind, OutputMeta, StagedContent
from mcp_offload.store.content_index import ContentIndex, Encoded
from mcp_offload.store.handles import new_handle, validate_handle
from mcp_offload.tokens import TokenCounter

# The reference around a preview (the "Stored as …" line, notes, the retrieval hint) takes about this many tokens:
# the preview gets the rest of the budget, so the whole reference stays within `preview_tokens`.
FRAME_TOKENS = 80
FREE_LATER_BYTES = 1 << 20  # a parse of a smaller document is freed in well under a millisecond: at once
STAGE_MIN_CHARS = 256 * 1024  # a smaller output's write takes about as long as starting the thread that stages it


@dataclass(frozen=True, slots=True)
class Ingested:
    """A stored output and the preview the model sees instead of it."""

    meta: OutputMeta
    preview: Preview

    def output(self) -> OffloadOutput:
        """As the retrieval API and the tools report it."""
        meta = self.meta
        return OffloadOutput(
            **facts_of(meta), notes=list(meta.notes), preview=self.preview.text, shape=self.preview.data
        )


def model_preview(
    text: str,
    kind: Kind,
    *,
    settings: Settings,
    count_tokens: Callable[[str], int],
    total_lines: int,
    parsed: object | None = None,
    newlines_before: Callable[[int], int] | None = None,
) -> Preview:
    """The preview the model sees of a text output: the reference's budget (`preview_tokens`) less its frame.
    `newlines_before`: from the output's content index when at hand (the same preview, sooner)."""
    return build_preview(
        text,
        kind,
        parsed=parsed,
        budget_tokens=max(100, settings.preview_tokens - FRAME_TOKENS),
        count_tokens=count_tokens,
        total_lines=total_lines,
        newlines_before=newlines_before,
    )


def stored_preview(meta: OutputMeta, content: bytes, settings: Settings, count_tokens: Callable[[str], int]) -> Preview:
    """The preview the model saw of a stored output, rebuilt from its bytes with the same rule (and, as long as the
    settings and tokenizer are the same, the same result)."""
    if meta.kind == "blob":
        return blob_preview(meta.mime_type, meta.size)
    text = content.decode("utf-8", "surrogatepass")  # stored exactly as given, lone surrogates included
    return model_preview(text, meta.kind, settings=settings, count_tokens=count_tokens, total_lines=meta.lines)


def clean_name(name: str | None, max_chars: int) -> str | None:
    """Names are labels only (never paths): drop control/format characters, trim, cap the length."""
    if name is None:
        return None
    kept = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C" or ch == " ")
    kept = " ".join(kept.split())[:max_chars]
    return kept or None


def encode_output(settings: Settings, text: str) -> tuple[bytes, tuple[str, ...]]:
    """A text output's bytes as stored (UTF-8; lone surrogates kept, with a note) and its notes; `TooLarge` over the
    size cap."""
    notes: tuple[str, ...] = ()
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
        notes = ("content has unpaired UTF-16 surrogates; stored exactly as given (not valid UTF-8 on disk)",)
    if len(data) > settings.max_output_bytes:
        raise TooLarge(
            f"content is {len(data):,} bytes, over this server's cap of {settings.max_output_bytes:,} bytes; "
            "nothing was stored.",
            SPLIT_ADVICE,
        )
    return data, notes


SPLIT_ADVICE = "Split it into parts and offload each."


@dataclass(frozen=True, slots=True)
class Prepared:
    """A text ready to store: its metadata and preview, its content index and its bytes."""

    ingested: Ingested
    index: ContentIndex
    data: bytes


def prepare_text(
    settings: Settings,
    tokens: TokenCounter,
    text: str,
    name: str | None,
    source: str | None,
    handle: str | None = None,
    *,
    free_in_background: bool = False,
    encoded: tuple[Encoded, tuple[str, ...]] | None = None,
) -> Prepared:
    """Everything but the store write: encode, index, detect the kind, preview, count tokens. Pure CPU work, run in
    an ingest worker process or a thread (never on the event loop); raises `TooLarge` over the size cap.

    `encoded`: `encode_output(settings, text)`, when the caller has it already (it encodes a big output first, to
    start the store's write of its bytes meanwhile; an ingest worker is sent the bytes, or maps them). A mapping is
    read, not kept: the `Prepared` then has no `data` (the caller has the bytes).

    `free_in_background`: a big parsed document is freed by a background thread (`kinds.free_later`) instead of
    before returning (~20 % of its parse, off the answer's path; in a worker process that would only slow the reply's
    pickling, so the workers free it here)."""
    data, notes = encode_output(settings, text) if encoded is None else encoded
    index = ContentIndex.build(data, is_ascii=text.isascii())  # the same answer, without a pass over the bytes
    # The parsed value lives only until the preview is built: the GC stays paused until it is freed, so that it is
    # never traversed (one collection over a 100 MB document's objects costs about as much as parsing it).
    with gc_paused():
        kind, parsed = detect_kind(text, data)
        preview = model_preview(
            text,
            kind,
            settings=settings,
            count_tokens=tokens.count,
            total_lines=index.lines,
            parsed=parsed,
            newlines_before=lambda pos: index.newlines_before_char(data, pos),
        )
        if free_in_background and parsed is not None and len(data) >= FREE_LATER_BYTES:
            free_later(parsed)
        del parsed
    if "\x00" in text and kind == "text":
        notes = (*notes, "content contains NUL characters; stored exactly as given")
    count, approx = tokens.count_large(text, settings.tokens_exact_chars)
    meta = OutputMeta(
        handle=handle or new_handle(),
        kind=kind,
        size=index.size,
        chars=index.chars,
        lines=index.lines,
        tokens=count,
        tokens_estimated=approx or tokens.estimated,
        created=time.time(),
        name=clean_name(name, settings.max_name_chars),
        source=source,
        notes=notes,
    )
    return Prepared(Ingested(meta=meta, preview=preview), index, data if isinstance(data, bytes) else b"")


async def ingest_text(
    services: Services,
    scope: str,
    text: str,
    *,
    name: str | None = None,
    source: str | None = None,
    handle: str | None = None,
) -> Ingested:
    """Store `text` under `scope` and return its metadata and preview. Raises `OffloadError`s; stores nothing then.

    `handle`: publish under this (validated) handle instead of a fresh one, idempotently: a front end that derives
    handles from the content (`store.handles.derived_handle`) may find it already stored by another instance, and
    then the stored output is kept and the call reports it as stored."""
    if not isinstance(text, str) or not text:
        raise InvalidContent("content is empty; there is nothing to offload.")
    if len(text) > services.settings.max_output_bytes:  # every char is at least one byte: fail before encoding
        raise TooLarge(
            f"content is over this server's cap of {services.settings.max_output_bytes:,} bytes; nothing was stored.",
            SPLIT_ADVICE,
        )
    if handle is not None:
        validate_handle(handle)
    staged: StagedContent | None = None
    with offload_in_progress():  # background index builds give way meanwhile
        try:
            prepared: object | None = None
            encoded: tuple[bytes, tuple[str, ...]] | None = None
            if len(text) >= STAGE_MIN_CHARS:  # a big one: its bytes are written while the rest is prepared
                encoded = await anyio.to_thread.run_sync(encode_output, services.settings, text)
                staged = services.store.stage(encoded[0])
                if services.ingest.takes(len(text)):  # in a worker process, sent the bytes
                    prepared = await services.ingest.prepare(*encoded, name, source, handle)
            if not isinstance(prepared, Prepared):
                prepared = await anyio.to_thread.run_sync(
                    partial(prepare_text, free_in_background=True, encoded=encoded),
                    services.settings,
                    services.tokens,
                    text,
                    name,
                    source,
                    handle,
                )
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
        ingested, index, data = prepared.ingested, prepared.index, prepared.data
        try:
            await services.store.put(scope, ingested.meta, index, data, staged)  # it takes the staging over
        except HandleExists:
            if handle is None:
                raise
            return ingested
    meta = ingested.meta
    if meta.kind in ("json", "jsonl"):
        # in the background: for the JSON paths of search hits, kept beside the output for other processes
        warm_structure(meta.handle, meta.created, data, services.store.sidecar(scope, meta.handle, STRUCTURE_SIDECAR))
    if is_tabular(meta.kind, ingested.preview.data):
        services.sql.prestart()  # in the background, once per process: the first SQL query skips DuckDB's start
    # in the background too: the passage index of ranked questions, kept with the output where the store can
    # (in an ingest worker process when there are any)
    remote = services.ingest.passage_index if services.ingest.workers else None
    key = (meta.handle, meta.created, meta.size)
    warm_index(key, data, services.store.sidecar(scope, meta.handle, SIDECAR), remote)
    return ingested


def is_tabular(kind: str, shape: dict[str, Any]) -> bool:
    """Whether the preview shows rows SQL reads as table t: a CSV/TSV table, JSON Lines of objects, or a JSON array
    of objects (records)."""
    if kind == "text":
        return shape.get("type") == "table"
    if kind == "jsonl":
        return shape.get("record_type") == "object"
    return kind == "json" and shape.get("type") == "array" and shape.get("element") == "object"


async def ingest_blob(
    services: Services,
    scope: str,
    data: bytes,
    *,
    mime_type: str | None,
    name: str | None = None,
    source: str | None = None,
    handle: str | None = None,
) -> Ingested:
    """Store binary content (an image, audio, a binary resource) as a blob: no text preview, size and type only.
    `handle`: as for `ingest_text` (a derived handle, published idempotently)."""
    if not data:
        raise InvalidContent("content is empty; there is nothing to offload.")
    if len(data) > services.settings.max_output_bytes:
        raise TooLarge(f"blob is {len(data):,} bytes, over this server's cap; nothing was stored.")
    if handle is not None:
        validate_handle(handle)
    index = ContentIndex.for_blob(len(data))
    meta = OutputMeta(
        handle=handle or new_handle(),
        kind="blob",
        size=len(data),
        chars=0,
        lines=0,
        tokens=0,
        tokens_estimated=False,
        created=time.time(),
        name=clean_name(name, services.settings.max_name_chars),
        mime_type=mime_type,
        source=source,
    )
    preview = blob_preview(mime_type, len(data))
    try:
        await services.store.put(scope, meta, index, data)
    except HandleExists:
        if handle is None:
            raise
    return Ingested(meta=meta, preview=preview)


def blob_preview(mime_type: str | None, size: int) -> Preview:
    """What the model sees of binary content: its type and size, no bytes."""
    return Preview(
        kind="blob",
        text=f"binary {mime_type or 'application/octet-stream'}, {size:,} bytes (not shown)",
        data={"mime_type": mime_type, "bytes": size},
        tokens=0,
    )
