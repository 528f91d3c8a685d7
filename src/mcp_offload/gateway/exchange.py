"""One request through the gateway, as the log line and the accounting see it: `Exchange` (its facts, with the
turn's `TurnReport`), its fields on the request's access-log line (`exchange_fields`), the turn's figures added to
its session's counters (`account_exchange`), and noting when the answer went out or the client went away."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.types import Message, Receive, Send

from mcp_offload.apis.base import LlmApi
from mcp_offload.cachesafe.record import arrival_order
from mcp_offload.cachesafe.request_rewrite import Rewrite
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.core.services import Services
from mcp_offload.gateway.accounting import TurnCounters, record_turn
from mcp_offload.providers.base import Provider

log = logging.getLogger("mcp_offload.gateway")


@dataclass(slots=True)
class TurnReport:
    """What one client turn cost and did (the retrieval loop's figures, the upstream's usage, how it failed): for
    the access log and the accounting."""

    loops: int = 0
    retrieval_calls: int = 0
    retrieval_errors: int = 0
    tokens_pulled_back: int = 0
    mixed: bool = False
    upstream_calls: int = 1
    usage: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # how the turn failed, if it did (stream cut, follow-up refused, ...)


@dataclass(slots=True)
class Exchange:
    """One request's facts, for the log line and the accounting."""

    api: LlmApi | None  # None: a request relayed as is
    provider: Provider | None = None  # where it went (its cache prices)
    model: str = ""
    stream: bool = False
    status: int = 0
    rewrite: Rewrite | None = None
    session: CacheSafeSession | None = None
    fail_open: str | None = None
    bypassed: bool = False
    answered: bool = False  # the whole answer went out
    report: TurnReport = field(default_factory=TurnReport)
    arrived: int = field(default_factory=arrival_order)  # orders this request's expansion against a retry's


async def account_exchange(services: Services, exchange: Exchange) -> None:
    """Add the turn's figures to its session's counters (never fails the turn)."""
    api, provider = exchange.api, exchange.provider
    rewrite, report = exchange.rewrite, exchange.report
    session = exchange.session
    if api is None or provider is None or session is None:
        return
    figures = api.dialect.figures(report.usage)
    counters = TurnCounters(
        prices=provider.cache_prices(api, exchange.model),
        upstream_calls=report.upstream_calls if exchange.status else 0,
        tokens_kept_out=rewrite.tokens_kept_out if rewrite is not None and not exchange.bypassed else 0,
        tokens_pulled_back=report.tokens_pulled_back,
        retrieval_calls=report.retrieval_calls,
        loops=report.loops,
        fail_open=1 if exchange.fail_open else 0,
        offloaded=len(rewrite.offloaded) if rewrite is not None else 0,
        input_tokens=figures.uncached_tokens,
        cache_read_tokens=figures.cache_read_tokens,
        cache_write_tokens=figures.cache_write_tokens,
        output_tokens=figures.output_tokens,
    )
    try:
        with anyio.fail_after(5):
            await record_turn(services, session, counters)
    except Exception as exc:  # the turn is answered; counting it must not fail it (record_turn keeps the counts
        # of a down store in memory and adds them with the session's next successful write)
        log.warning("could not record the turn's figures: %s", exc)


def noting_completion(send: Send, exchange: Exchange) -> Send:
    """`send`, which also notes on `exchange` when the whole answer went out (a disconnect after that is normal)."""

    async def noting(message: Message) -> None:
        await send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            exchange.answered = True

    return noting


async def watch_disconnect(receive: Receive, scope: anyio.CancelScope, exchange: Exchange) -> None:
    """Cancel the request's work when the client goes away (its upstream response is closed on the way out)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not exchange.answered:
                exchange.report.problem = "client disconnected"
            scope.cancel()
            return


def exchange_fields(exchange: Exchange) -> dict[str, Any]:
    """The request's fields for its access-log line (`web/access_log.py` adds method, path, status and ms)."""
    rewrite, report = exchange.rewrite, exchange.report
    fields: dict[str, Any] = {
        "api": exchange.api.name if exchange.api else "relay",
        "stream": exchange.stream,
        "session": exchange.session.key[:12] if exchange.session else None,
    }
    if exchange.api is not None:
        fields.update(
            changed=bool(rewrite and rewrite.changed),
            offloaded=len(rewrite.offloaded) if rewrite else 0,
            tokens_kept_out=rewrite.tokens_kept_out if rewrite else 0,
            loops=report.loops,
            retrieval_calls=report.retrieval_calls,
            fail_open=exchange.fail_open,
            bypassed=exchange.bypassed,
            usage=report.usage or None,
        )
    if report.problem:
        fields["problem"] = report.problem
    return fields
