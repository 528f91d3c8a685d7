"""Shared by the preview tests: stand-in token counters, realistic documents, running jq, timing."""

from __future__ import annotations

import random
import re
import shutil
from typing import Any

import jq

from mcp_offload.preview import Preview, build_preview
from mcp_offload.preview.kinds import detect_kind
from support.cpu_time import best_cpu_of

JQ_CLI = shutil.which("jq") or "/usr/bin/jq"
_WORDS = re.compile(r"\w+|[^\w\s]|\s+")


def len4(text: str) -> int:
    """The tiktoken-free stand-in the brief asks for: about 4 characters a token."""
    return len(text) // 4


def word_tokens(text: str) -> int:
    """A stricter stand-in: every word, punctuation mark and whitespace run is a token (JSON-heavy text costs more)."""
    return len(_WORDS.findall(text))


def api_response(n_items: int = 420, seed: int = 3) -> dict[str, Any]:
    """A realistic list endpoint: nested objects, arrays of objects with optional keys, odd and unicode keys."""
    rng = random.Random(seed)

    def item(i: int) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": i,
            "name": f"Widget {i}",
            "status": rng.choice(["active", "active", "archived", "error"]),
            "price": {"amount": round(rng.random() * 100, 2), "currency": "EUR"},
            "tags": rng.sample(["red", "green", "blue", "sale", "new"], k=rng.randint(0, 3)),
            "created_at": "2024-03-01T10:00:00Z",
            "description": "A very fine widget. " * rng.randint(1, 6),
            "content-type": "application/json",
            "ünïcode key": True,
            "if": i % 2 == 0,
        }
        if i % 3 == 0:
            d["owner"] = {"login": f"user{i}", "id": i * 7, "site_admin": False}
        if i % 5 == 0:
            d["discount"] = None
        return d

    return {
        "data": {"items": [item(i) for i in range(n_items)], "total_count": 1834, "incomplete_results": False},
        "meta": {"page": 1, "per_page": n_items, "next": "https://api.example.com/v1/items?page=2&cursor=eyJpZCI6NH0"},
        "errors": [],
        "extra": {},
        "key with space": {"a-b": [1, 2, 3]},
    }


def log_records(n: int, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        record: dict[str, Any] = {
            "ts": f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "level": rng.choice(["info", "info", "warn", "error"]),
            "msg": f"request {i} handled in {rng.randint(1, 900)} ms",
            "ctx": {"path": f"/api/v1/items/{i}", "status": rng.choice([200, 404, 500])},
        }
        if i % 4 == 1:
            record["trace-id"] = f"{i:032x}"
        out.append(record)
    return out


def run_jq(program: str, text: str) -> list[Any]:
    return list(jq.compile(program).input_text(text).all())


def assert_paths_work(paths: list[str], text: str) -> None:
    """Every emitted jq program runs on the document and yields at least one value, none of them null."""
    for path in paths:
        results = run_jq(path, text)
        assert results, f"{path!r} yields nothing"
        assert all(r is not None for r in results), f"{path!r} yields null"


def preview_of(text: str, **kwargs: Any) -> Preview:
    kind, parsed = detect_kind(text)
    return build_preview(text, kind, parsed=parsed, **kwargs)


def best_of(runs: int, fn: Any) -> float:
    """The least CPU time of `runs` calls (support.cpu_time: other workers share the cores)."""
    return best_cpu_of(runs, fn)
