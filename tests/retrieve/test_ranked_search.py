"""Ranked search (`search_large_output(ranked=true)`): the relevance set of real outputs, the tool through a real MCP
client in both protocol eras (text and JSON outputs, jq paths that jq resolves), hostile questions as a table, scoping
between sessions, the Redis backend, and the passage cutter as a property."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_offload.core import outputs
from mcp_offload.core.services import Services
from mcp_offload.errors import SearchError
from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.retrieve.ranked.index_cache import INDEXES
from mcp_offload.retrieve.ranked.passages import LONGEST, passage_bounds
from support import ERAS, text_of
from support.planted_log import PLANTED, planted_log
from support.ranked_relevance import score_in_services


def log_text(lines: int = 20_000, planted_at: int = 12_345) -> str:
    """An access-log-like text with one planted error line at 1-based line `planted_at`."""
    return planted_log(lines, planted_at)


def orders_json(count: int = 3000) -> dict[str, Any]:
    orders = [{"id": f"ord-{i}", "status": "shipped", "note": f"parcel {i} left the warehouse"} for i in range(count)]
    orders[1777]["note"] = "customer asked for a refund because the parcel arrived damaged"
    return {"data": {"orders": orders}}


async def offload(client: Client, content: str, name: str | None = None) -> str:
    args = {"content": content} | ({"name": name} if name else {})
    result = await client.call_tool("offload", args)
    assert not result.is_error, text_of(result)
    return str(result_of(result)["handle"])


async def ranked(client: Client, question: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool("search_large_output", {"pattern": question, "ranked": True, **arguments})
    assert not result.is_error, text_of(result)
    assert result_of(result)
    return text_of(result), result_of(result)


# -- the relevance set ------------------------------------------------------------------------------------------


async def test_relevance_set_answers_in_the_top_3(services: Services) -> None:
    """Real outputs with planted and natural answers, paraphrased questions: >= 90 % answered in the top 3, asked
    across the whole session and within the answer's own output."""
    across, within = await score_in_services(services)
    assert across.share >= 0.9, across.misses
    assert within.share >= 0.9, within.misses


# -- through the MCP server --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_ranked_across_the_session_with_lines_and_jq_paths(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        log = await offload(client, log_text(), "app log")
        orders = await offload(client, json.dumps(orders_json(), indent=2), "orders")
        text, out = await ranked(client, "where is the timeout about the payment service?")
        best = out["passages"][0]
        assert best["handle"] == log
        assert best["start_line"] <= 12_345 <= best["end_line"]
        assert {"line": 12_345, "text": PLANTED} in best["lines"]
        assert f"12345: {PLANTED}" in text and "ranked by: timeout, payment, service" in text
        assert out["ranked_by"] == ["timeout", "payment", "service"] and out["matches"] == []

        text, out = await ranked(client, "which order was refunded because it arrived broken?", handle=orders)
        best = out["passages"][0]
        assert best["json_path"] == ".data.orders[1777].note", text
        assert f"at {best['json_path']}" in text and "#1 lines" in text and orders not in text.split("\n", 1)[1]
        got = await client.call_tool("query_large_output", {"handle": orders, "query": best["json_path"]})
        assert "refund" in text_of(got)
        # the passage's range reads back exactly what it covers
        read = await client.call_tool(
            "read_large_output", {"handle": orders, "start_line": best["start_line"], "end_line": best["end_line"]}
        )
        assert "refund because the parcel arrived damaged" in text_of(read)


async def test_jsonl_passages_name_their_record(server: OffloadServer) -> None:
    rows = [{"user": f"u{i}", "event": "login", "detail": "ok"} for i in range(5000)]
    rows[4242] = {"user": "mallory", "event": "login", "detail": "password rejected, account locked after 5 attempts"}
    async with Client(server) as client:
        handle = await offload(client, "\n".join(json.dumps(r) for r in rows))
        text, out = await ranked(client, "which account got locked out after failed passwords?", handle=handle)
        best = out["passages"][0]
        assert (best["record"], best["json_path"]) == (4242, ".detail"), text
        assert best["start_line"] <= 4243 <= best["end_line"]


async def test_max_results_and_the_default_of_five(server: OffloadServer) -> None:
    async with Client(server) as client:
        await offload(client, log_text())
        _, out = await ranked(client, "items billing search")
        assert len(out["passages"]) == 5
        _, out = await ranked(client, "items billing search", max_results=12)
        assert len(out["passages"]) == 12
        scores = [p["score"] for p in out["passages"]]
        assert scores == sorted(scores, reverse=True)


async def test_no_passage_and_record_scope_and_blobs(server: OffloadServer) -> None:
    async with Client(server) as client:
        handle = await offload(client, log_text(2000, 10))
        text, out = await ranked(client, "kubernetes quasar", handle=handle)
        assert out["passages"] == [] and "No passage" in text and "kubernetes, quasar" in text
        bad = await client.call_tool(
            "search_large_output", {"pattern": "payment timeout", "ranked": True, "scope": "record", "handle": handle}
        )
        assert bad.is_error and 'scope="record" does not combine with ranked=true' in text_of(bad)


# -- hostile questions --------------------------------------------------------------------------------------------

# (question, None if it must rank normally, else a piece of the error message)
HOSTILE: list[tuple[str, str | None]] = [
    ("the of and is to", "only common words"),
    ("Where is it? What was that?", "only common words"),
    ("!!! ??? ... ---", "no words to rank by"),
    ("", "no words to rank by"),
    ("x" * 10_000_000, "at most 2,000 characters"),
    ('"payment', None),  # an unterminated FTS5 string
    ('payment" OR "x', None),
    ("NEAR(payment timeout, 2)", None),
    ("body:payment", None),  # a column filter
    ("p:payment OR rank:timeout", None),
    ("{body p}: payment", None),
    ("payment*", None),
    ("* timeout", None),
    ("^payment", None),
    ("payment AND NOT timeout", None),
    ("((( payment", None),
    ("payment'); DROP TABLE p; --", None),
    ("payment\x00timeout", None),
    ("paymént tîmeout", None),  # diacritics are folded as in the index
    ("ＰＡＹＭＥＮＴ timeout", None),  # full-width letters
    ("支付 超时 timeout", None),
    ("payment 🔥 timeout", None),
    ("payment \ud800 timeout", None),  # an unpaired surrogate
    ("payment " * 240, None),  # repeated words: one term
    ("payment " + " ".join(f"w{i}" for i in range(300)), None),  # many words: the first 64 are used
]


@pytest.mark.parametrize(("question", "error"), HOSTILE, ids=[f"q{i}" for i in range(len(HOSTILE))])
async def test_hostile_questions_fail_cleanly_or_rank(services: Services, question: str, error: str | None) -> None:
    scope = outputs.SessionScope.new()
    await outputs.offload(services, scope, log_text(3000, 1234))
    started = time.perf_counter()
    if error is not None:
        with pytest.raises(SearchError, match=error):
            await outputs.search(services, scope, question, ranked=True)
    else:
        out = await outputs.search(services, scope, question, ranked=True)
        assert out.passages is not None
        if "payment" in question.lower() or "paym" in question:
            assert out.passages and out.passages[0].start_line <= 1234 <= out.passages[0].end_line
    assert time.perf_counter() - started < 5.0


async def test_hostile_question_through_mcp_is_an_error_result(server: OffloadServer) -> None:
    async with Client(server) as client:
        await offload(client, log_text(100, 5))
        result = await client.call_tool("search_large_output", {"pattern": "what is the", "ranked": True})
        assert result.is_error and "only common words (what, is, the)" in text_of(result)
        assert "Traceback" not in text_of(result)


# -- scoping --------------------------------------------------------------------------------------------------------


async def test_sessions_never_rank_each_others_outputs(server: OffloadServer) -> None:
    async with Client(server) as alice, Client(server) as bob:
        secret = await offload(alice, log_text(5000, 77))
        mine = await offload(bob, "a harmless note about gardening\n" * 50)
        # bob's index for alice's output would be the same key: it must not exist for him
        await ranked(alice, "payment timeout")
        text, out = await ranked(bob, "payment gateway timeout")
        assert out["passages"] == [] and out["outputs_searched"] == 1
        assert secret not in text and "payment-gateway" not in text
        stolen = await bob.call_tool("search_large_output", {"pattern": "payment", "ranked": True, "handle": secret})
        assert stolen.is_error and "payment-gateway" not in text_of(stolen) and mine in text_of(stolen)


# -- the Redis backend ------------------------------------------------------------------------------------------------


async def test_redis_lazy_outputs_rank_too(redis_offload_server: OffloadServer) -> None:
    content = json.dumps(orders_json(20_000), indent=1)
    assert len(content) > 1 << 20  # stored chunked, read through a lazy buffer
    async with Client(redis_offload_server) as client:
        handle = await offload(client, content)
        assert INDEXES.wait_idle(30)  # built in the background at offload, kept in this process only (no sidecar)
        builds, loads = INDEXES.builds, INDEXES.loads
        text, out = await ranked(client, "refund for a damaged parcel")
        assert out["passages"][0]["handle"] == handle
        assert out["passages"][0]["json_path"] == ".data.orders[1777].note", text
        assert (INDEXES.builds, INDEXES.loads) == (builds, loads)
        assert any(key[0] == handle for key in INDEXES.items)


# -- passages ---------------------------------------------------------------------------------------------------------

_PIECES = st.sampled_from(["a", "word ", "\n", "é", "日本", "🔥", " ", ",", "x" * 700, "\n\n", '{"k": 1}'])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=60))
def test_passages_cover_the_bytes_at_character_boundaries(pieces: list[str]) -> None:
    data = "".join(pieces).encode()
    bounds = [int(b) for b in passage_bounds(data)]
    assert bounds[0] == 0 and bounds[-1] == len(data)
    assert all(lo < hi for lo, hi in itertools.pairwise(bounds))
    for cut in bounds[1:-1]:
        assert not 0x80 <= data[cut] < 0xC0  # never inside a UTF-8 sequence
        data[:cut].decode()
    for lo, hi in itertools.pairwise(bounds):
        assert hi - lo <= LONGEST
