"""Ingest (`mcp_offload.core.ingest`): content → kind, tokens, index, preview → store. What reaches the stored
metadata, how names are cleaned, the size cap (checked before encoding when the length alone decides), the notes
for NUL characters and lone surrogates, blobs, `Ingested.output()`; and nothing stored when it refuses."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import mcp_offload.core.ingest as ingest_module
from mcp_offload.core.ingest import FRAME_TOKENS, blob_preview, clean_name, ingest_blob, ingest_text
from mcp_offload.core.results import facts_of
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import InvalidContent, TooLarge
from mcp_offload.settings import Settings
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.handles import scope_key, validate_handle

SCOPE = scope_key("test-offload")
CAP = 1000


@pytest.fixture
async def capped(tmp_path: Path) -> AsyncIterator[Services]:
    """Services whose outputs are capped at CAP bytes and names at 12 characters."""
    services = build_services(Settings(store=str(tmp_path / "store"), max_output_bytes=CAP, max_name_chars=12))
    try:
        yield services
    finally:
        await services.aclose()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


async def _stored_bytes(services: Services, handle: str) -> bytes:
    async with services.store.open(SCOPE, handle) as stored:
        return stored.read_bytes(0, stored.meta.size)


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ('{"items": [1, 2, 3]}', "json"),
        ("[1, 2]\n", "json"),
        ('{"a": 1}\n{"a": 2}\n', "jsonl"),
        ("plain text\nover two lines", "text"),
        ('{"broken": ', "text"),
        ("NaN", "text"),
    ],
)
async def test_the_detected_kind_reaches_the_meta_and_the_preview(services: Services, content: str, kind: str) -> None:
    ingested = await ingest_text(services, SCOPE, content)
    assert ingested.meta.kind == ingested.preview.kind == kind
    assert (await services.store.meta(SCOPE, ingested.meta.handle)).kind == kind


async def test_the_meta_describes_the_content(services: Services) -> None:
    text = "héllo wörld\n" * 50 + "tail"
    before = time.time()
    ingested = await ingest_text(services, SCOPE, text, name="greetings", source="proxy:srv/tool")
    meta = ingested.meta
    assert validate_handle(meta.handle) == meta.handle
    assert (meta.size, meta.chars, meta.lines) == (len(text.encode()), len(text), 51)
    assert meta.tokens == services.tokens.count(text) and meta.tokens_estimated is services.tokens.estimated
    assert (meta.name, meta.source, meta.mime_type, meta.notes) == ("greetings", "proxy:srv/tool", None, ())
    assert before <= meta.created <= time.time()
    assert await services.store.meta(SCOPE, meta.handle) == meta
    assert await _stored_bytes(services, meta.handle) == text.encode()
    async with services.store.open(SCOPE, meta.handle) as stored:
        assert stored.index == ContentIndex.build(text.encode())


async def test_the_preview_keeps_within_the_budget(services: Services) -> None:
    text = "\n".join(f"line {n}: " + "word " * 30 for n in range(2000))
    ingested = await ingest_text(services, SCOPE, text)
    budget = services.settings.preview_tokens - FRAME_TOKENS
    assert 0 < ingested.preview.tokens <= budget
    header, first = ingested.preview.text.splitlines()[:2]
    assert header == f"text: 2,000 lines, {len(text):,} chars"  # line count from the offload-time index
    assert first.startswith("line 0: word")


async def test_output_reports_the_meta_and_the_preview(services: Services) -> None:
    doc = json.dumps({"items": [{"id": i} for i in range(50)]})
    ingested = await ingest_text(services, SCOPE, doc, name="items")
    output = ingested.output()
    assert output.model_dump() == {
        **facts_of(ingested.meta),
        "notes": [],
        "preview": ingested.preview.text,
        "shape": ingested.preview.data,
    }
    assert (output.handle, output.kind, output.bytes, output.name) == (ingested.meta.handle, "json", len(doc), "items")
    assert output.shape and ".items" in output.preview


@pytest.mark.parametrize(
    ("name", "cleaned"),
    [
        (None, None),
        ("report", "report"),
        ("  spaced   out\tname  ", "spaced outname"),  # a tab is a control character: dropped
        ("bell\x07 and nul\x00", "bell and nul"),
        ("line\nbreak\r", "linebreak"),
        ("zero\u200bwidth\u202eRTL", "zerowidthRTL"),  # format characters (Cf) dropped
        ("\x00\x01\n\t", None),  # nothing left
        ("   ", None),
        ("ünïcödé 名前", "ünïcödé 名前"),
        ("x" * 300, "x" * 200),
    ],
)
def test_clean_name(name: str | None, cleaned: str | None) -> None:
    assert clean_name(name, 200) == cleaned


async def test_names_are_cleaned_and_capped_on_the_way_in(capped: Services) -> None:
    ingested = await ingest_text(capped, SCOPE, "content", name="\x1b[31mred\x1b[0m and a very long tail")
    assert ingested.meta.name == "[31mred[0m a"  # ESC dropped, cut at 12 characters
    assert len(ingested.meta.name) == 12
    blob = await ingest_blob(capped, SCOPE, b"\x89PNG", mime_type="image/png", name="\npicture-of-a-cat.png")
    assert blob.meta.name == "picture-of-a"


async def test_empty_content_is_refused_and_nothing_stored(services: Services) -> None:
    with pytest.raises(InvalidContent, match="content is empty"):
        await ingest_text(services, SCOPE, "")
    with pytest.raises(InvalidContent, match="content is empty"):
        await ingest_blob(services, SCOPE, b"", mime_type="image/png")
    assert await services.store.list(SCOPE) == []


async def test_the_length_cap_is_checked_before_encoding(
    capped: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded: list[int] = []
    real_encode = ingest_module.encode_output

    def encode(settings: Settings, text: str) -> tuple[bytes, tuple[str, ...]]:
        encoded.append(len(text))
        return real_encode(settings, text)

    monkeypatch.setattr(ingest_module, "encode_output", encode)
    files = _files(tmp_path / "store")
    with pytest.raises(TooLarge) as excinfo:
        await ingest_text(capped, SCOPE, "x" * (CAP + 1))
    assert str(excinfo.value).startswith("content is over this server's cap of 1,000 bytes; nothing was stored.")
    assert encoded == []  # refused on its length alone: never encoded
    assert await capped.store.list(SCOPE) == [] and _files(tmp_path / "store") == files


async def test_the_byte_cap_counts_encoded_bytes(capped: Services, tmp_path: Path) -> None:
    files = _files(tmp_path / "store")
    with pytest.raises(TooLarge) as excinfo:
        await ingest_text(capped, SCOPE, "€" * 400)  # 400 characters, 1,200 bytes
    assert str(excinfo.value).startswith("content is 1,200 bytes, over this server's cap of 1,000 bytes")
    assert await capped.store.list(SCOPE) == [] and _files(tmp_path / "store") == files
    exact = await ingest_text(capped, SCOPE, "€" * 333 + "x")  # 1,000 bytes: at the cap is allowed
    assert exact.meta.size == CAP


async def test_a_blob_over_the_cap_is_refused(capped: Services) -> None:
    with pytest.raises(TooLarge, match="blob is 1,001 bytes, over this server's cap; nothing was stored"):
        await ingest_blob(capped, SCOPE, b"\0" * (CAP + 1), mime_type=None)
    assert await capped.store.list(SCOPE) == []


async def test_nul_characters_get_a_note(services: Services) -> None:
    text = "before\x00after\n"
    ingested = await ingest_text(services, SCOPE, text)
    assert ingested.meta.kind == "text"
    assert ingested.meta.notes == ("content contains NUL characters; stored exactly as given",)
    assert ingested.output().notes == list(ingested.meta.notes)
    assert await _stored_bytes(services, ingested.meta.handle) == text.encode()


async def test_json_with_an_escaped_nul_gets_no_note(services: Services) -> None:
    ingested = await ingest_text(services, SCOPE, '{"a": "\\u0000"}')
    assert (ingested.meta.kind, ingested.meta.notes) == ("json", ())


async def test_lone_surrogates_get_a_note_and_are_stored_exactly(services: Services) -> None:
    text = "high \ud800 low \udfff and NUL \x00"
    ingested = await ingest_text(services, SCOPE, text)
    notes = ingested.meta.notes
    assert len(notes) == 2 and "unpaired UTF-16 surrogates" in notes[0] and "NUL" in notes[1]
    stored = await _stored_bytes(services, ingested.meta.handle)
    assert stored == text.encode("utf-8", "surrogatepass") and stored.decode("utf-8", "surrogatepass") == text
    assert (ingested.meta.size, ingested.meta.chars) == (len(stored), len(text))


async def test_blob_offload(services: Services) -> None:
    data = bytes(range(256)) * 10
    ingested = await ingest_blob(services, SCOPE, data, mime_type="image/png", name="pic", source="proxy:s/t")
    meta = ingested.meta
    assert (meta.kind, meta.size, meta.chars, meta.lines, meta.tokens, meta.tokens_estimated) == (
        "blob", 2560, 0, 0, 0, False
    )  # fmt: skip
    assert (meta.mime_type, meta.name, meta.source) == ("image/png", "pic", "proxy:s/t")
    assert ingested.preview == blob_preview("image/png", 2560)
    assert ingested.preview.text == "binary image/png, 2,560 bytes (not shown)"
    assert ingested.preview.data == {"mime_type": "image/png", "bytes": 2560} and ingested.preview.tokens == 0
    assert await _stored_bytes(services, meta.handle) == data
    async with services.store.open(SCOPE, meta.handle) as stored:
        assert stored.index == ContentIndex.for_blob(2560)
    output = ingested.output()
    assert (output.kind, output.bytes, output.mime_type, output.preview) == (
        "blob",
        2560,
        "image/png",
        ingested.preview.text,
    )


def test_blob_preview_without_a_type() -> None:
    preview = blob_preview(None, 1_234_567)
    assert preview.text == "binary application/octet-stream, 1,234,567 bytes (not shown)"
    assert preview.data == {"mime_type": None, "bytes": 1_234_567}
