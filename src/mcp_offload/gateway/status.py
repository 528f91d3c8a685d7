"""The gateway's figures for people: the JSON document (`gateway_stats`), a plain-text table (`stats_lines`, for
`mcp-offload stats`) and an HTML section / page (for the HTTP service's status page and the gateway's own `GET /`,
served with `GET /stats` by `status_endpoint`).

The figures are gw-core's per-session counters (accounting.py): requests, upstream calls, tokens kept out and
pulled back, retrieval calls, loops, fail-open events, the upstream's own cache figures, and two costs in
input-token equivalents at the provider's cache prices: what the turns cost through the gateway, and what the
same turns would have cost going direct (every kept-out token read from the cache each turn, each offloaded
output written to it once). Their ratio is the honest figure: under 1.0 the gateway saved money.
"""

from __future__ import annotations

import html
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from mcp_offload.cachesafe.record import DecisionRecord, open_record
from mcp_offload.core.services import Services
from mcp_offload.errors import StoreError
from mcp_offload.gateway.accounting import session_summary
from mcp_offload.gateway.errors import GatewayError, own_error_body
from mcp_offload.version import __version__
from mcp_offload.web.page import html_page

MAX_SESSIONS_SHOWN = 20
COLUMNS = (
    ("requests", "requests"),
    ("upstream_calls", "upstream calls"),
    ("tokens_kept_out", "kept out"),
    ("tokens_pulled_back", "pulled back"),
    ("retrieval_calls", "retrievals"),
    ("loops", "loops"),
    ("fail_open", "fail-open"),
    ("cache_read_tokens", "cache read"),
    ("cache_write_tokens", "cache write"),
)


async def gateway_stats(services: Services) -> dict[str, Any]:
    """The summary document (sessions most recent first, at most MAX_SESSIONS_SHOWN, and the totals)."""
    return await record_stats(open_record(services))


async def record_stats(record: DecisionRecord) -> dict[str, Any]:
    """`gateway_stats` from the record alone (`record_beside`: `mcp-offload stats`)."""
    summary = await session_summary(record)
    sessions = summary.get("sessions", [])
    return {"sessions": sessions[:MAX_SESSIONS_SHOWN], "sessions_total": len(sessions), "totals": summary["totals"]}


def _figure(counters: dict[str, Any], name: str) -> int:
    return int(counters.get(name, 0))


def cost_sentence(totals: dict[str, Any]) -> str:
    actual = totals.get("cost_actual_milli", 0) / 1000
    direct = totals.get("cost_direct_milli", 0) / 1000
    ratio = totals.get("cost_ratio")
    if not direct:
        return "No gateway turns recorded yet."
    return (
        f"Cost through the gateway {actual:,.0f} input-token equivalents vs {direct:,.0f} going direct "
        f"({ratio:.3f}x direct) at the providers' cache prices."
    )


def stats_lines(stats: dict[str, Any]) -> list[str]:
    """The gateway table for `mcp-offload stats` (empty when no gateway session is recorded)."""
    if not stats["sessions_total"]:
        return []
    header = ("session", "last used", *(label for _, label in COLUMNS), "cost/direct")
    rows: list[tuple[str, ...]] = [header]
    for session in stats["sessions"]:
        counters = session["counters"]
        ratio = session.get("cost_ratio")
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(session["last_used"]))
        rows.append(
            (
                session["session"][:12],
                when,
                *(f"{_figure(counters, name):,}" for name, _ in COLUMNS),
                f"{ratio:.3f}" if ratio is not None else "-",
            )
        )
    totals = stats["totals"]
    ratio = totals.get("cost_ratio")
    rows.append(
        (
            f"all {stats['sessions_total']}",
            "",
            *(f"{_figure(totals, name):,}" for name, _ in COLUMNS),
            f"{ratio:.3f}" if ratio is not None else "-",
        )
    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["LLM gateway (per session, UTC)"]
    for n, row in enumerate(rows):
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
        if n == 0 or n == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(cost_sentence(totals))
    return lines


def render_section(stats: dict[str, Any]) -> str:
    """An HTML section: the totals, the cost sentence and the most recent sessions."""
    if not stats["sessions_total"]:
        return "<h2>LLM gateway</h2><p>No gateway turns recorded.</p>"
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in COLUMNS)
    rows = [f"<table><tr><th>session</th>{head}<th>cost / direct</th></tr>"]
    for session in [*stats["sessions"], {"session": "total", "counters": stats["totals"], **stats["totals"]}]:
        counters = session["counters"]
        ratio = session.get("cost_ratio")
        cells = "".join(f"<td class=n>{_figure(counters, name):,}</td>" for name, _ in COLUMNS)
        shown = f"{ratio:.3f}" if ratio is not None else "-"
        rows.append(f"<tr><td>{html.escape(session['session'][:12])}</td>{cells}<td class=n>{shown}</td></tr>")
    rows.append("</table>")
    return f"<h2>LLM gateway</h2><p>{html.escape(cost_sentence(stats['totals']))}</p>{''.join(rows)}"


def render_page(stats: dict[str, Any]) -> str:
    """The gateway's own `GET /`, in the style of the HTTP service's status page."""
    return html_page(
        "mcp-offload gateway",
        f"<h1>mcp-offload gateway {html.escape(__version__)}</h1>",
        render_section(stats),
        "<p>JSON: <a href=stats>/stats</a>.</p>",
    )


def status_endpoint(services: Services) -> Callable[[Request], Awaitable[Response]]:
    """`GET /stats` (the JSON document) and `GET /` (the page); a store outage is a 503 in the gateway's own error
    document (these are not provider paths)."""

    async def status(request: Request) -> Response:
        try:
            stats = await gateway_stats(services)
        except StoreError as exc:
            error = GatewayError(503, "store_unavailable", f"The gateway's store is unavailable: {exc}")
            return Response(own_error_body(error), 503, media_type="application/json")
        if request.url.path == "/stats":
            return Response(orjson.dumps(stats), media_type="application/json")
        return HTMLResponse(render_page(stats))

    return status
