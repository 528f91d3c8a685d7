"""`GET /`: a small HTML status page: each proxied upstream's state, and an inline SVG bar chart of the net tokens
saved per day (from the durable savings record). Self-contained: no scripts, no external assets, one request.
Behind the same bearer auth as /mcp."""

from __future__ import annotations

import html
import time
from collections.abc import Awaitable, Callable, Sequence

from starlette.requests import Request
from starlette.responses import HTMLResponse

from mcp_offload import __version__
from mcp_offload.gateway.status import render_section
from mcp_offload.proxy.router import ProxyRouter
from mcp_offload.proxy.upstream import UpstreamStatus
from mcp_offload.savings import SavingsRecord, last_days, summarize
from mcp_offload.savings.record import DaySummary, SavingsRow
from mcp_offload.serve.http.stats_endpoint import GatewayFigures, read_gateway, requested_days
from mcp_offload.server.extension import Extension

CHART_W, CHART_H, CHART_PAD = 720, 200, 30

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.ready{color:#17702a}.failed,.stopped{color:#b00020}.starting,.restarting{color:#8a6d00}
"""


def router_of(extensions: Sequence[Extension]) -> ProxyRouter | None:
    """The proxy behind the server's extensions (itself, or behind the lazy-tools front), if any."""
    for ext in extensions:
        candidate = ext if isinstance(ext, ProxyRouter) else getattr(ext, "router", None)
        if isinstance(candidate, ProxyRouter):
            return candidate
    return None


def status_page(
    record: SavingsRecord, extensions: Sequence[Extension], gateway: GatewayFigures | None = None
) -> Callable[[Request], Awaitable[HTMLResponse]]:
    async def page(request: Request) -> HTMLResponse:
        days = requested_days(request) or 30
        rows = await record.read(days)
        summaries, total = summarize(rows, last_days(days, time.time()))
        router = router_of(extensions)
        statuses = [u.status() for u in router.upstreams] if router is not None else None
        section = ""
        if gateway is not None:
            figures = await read_gateway(gateway)
            if figures is None:
                section = "<h2>LLM gateway</h2><p>The gateway's record is unavailable right now.</p>"
            elif figures["sessions_total"]:
                section = render_section(figures)  # only when a gateway has served through this store
        return HTMLResponse(render_page(statuses, summaries, total, section))

    return page


def render_page(
    statuses: list[UpstreamStatus] | None, summaries: list[DaySummary], total: SavingsRow, gateway: str = ""
) -> str:
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>mcp-offload status</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>mcp-offload {html.escape(__version__)}</h1>",
        "<h2>Upstream servers</h2>",
        _upstreams_table(statuses),
        f"<h2>Net tokens saved per day (last {len(summaries)} days)</h2>",
        render_chart(summaries),
        "<p>Total: "
        f"{total.results_offloaded:,} of {total.results_seen:,} results offloaded, "
        f"{total.tokens_kept_out:,} tokens kept out of context, {total.tokens_retrieved:,} pulled back, "
        f"<strong>{total.tokens_net:,} net saved</strong>. JSON: <a href=stats>/stats</a>.</p>",
        gateway,
        "</body></html>",
    ]
    return "\n".join(parts)


def _upstreams_table(statuses: list[UpstreamStatus] | None) -> str:
    if statuses is None:
        return "<p>Not proxying (started without <code>--config</code>).</p>"
    if not statuses:
        return "<p>No upstream servers in the config.</p>"
    rows = ["<table><tr><th>server</th><th>transport</th><th>state</th><th>tools</th><th>last error</th></tr>"]
    for s in statuses:
        state = html.escape(s.state)
        rows.append(
            f"<tr><td>{html.escape(s.name)}</td><td>{html.escape(s.transport)}</td>"
            f"<td class={state}>{state}</td><td class=n>{s.tools}</td>"
            f"<td>{html.escape(s.last_error or '')}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def render_chart(summaries: list[DaySummary]) -> str:
    """An inline SVG bar per day (net saved; negative days go below the axis), with a <title> tooltip each."""
    values = [s.total.tokens_net for s in summaries]
    top = max([*values, 0]) or 1
    bottom = min([*values, 0])
    span = top - bottom or 1
    inner_h = CHART_H - 2 * CHART_PAD
    zero_y = CHART_PAD + inner_h * top / span
    step = (CHART_W - 2 * CHART_PAD) / max(len(values), 1)
    bars = []
    for i, (summary, value) in enumerate(zip(summaries, values, strict=True)):
        height = inner_h * abs(value) / span
        y = zero_y - height if value >= 0 else zero_y
        x = CHART_PAD + i * step + step * 0.1
        colour = "#2b7bb9" if value >= 0 else "#c0392b"
        bars.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" height="{max(height, 0.5):.1f}" '
            f'fill="{colour}"><title>{summary.day}: {value:,} tokens net</title></rect>'
        )
    labels = ""
    if summaries:
        labels = (
            f'<text x="{CHART_PAD}" y="{CHART_H - 8}" font-size="11">{summaries[0].day}</text>'
            f'<text x="{CHART_W - CHART_PAD}" y="{CHART_H - 8}" font-size="11" text-anchor="end">'
            f"{summaries[-1].day}</text>"
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" height="{CHART_H}" '
        f'viewBox="0 0 {CHART_W} {CHART_H}" role="img" aria-label="net tokens saved per day">'
        f'<text x="{CHART_PAD}" y="{CHART_PAD - 10}" font-size="11">max {top:,}</text>'
        f'<line x1="{CHART_PAD}" y1="{zero_y:.1f}" x2="{CHART_W - CHART_PAD}" y2="{zero_y:.1f}" stroke="#888"/>'
        f"{''.join(bars)}{labels}</svg>"
    )
