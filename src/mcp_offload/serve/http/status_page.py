"""`GET /`: a small HTML status page: uptime, store usage against its quotas, each proxied upstream's state, restarts
and last error (with when), today's figures per server and tool, and an inline SVG bar chart of the net tokens saved
per day (from the durable savings record), or a "no data yet" note. `?refresh=N` (5-3600 s) reloads it every N
seconds (a meta refresh). Self-contained: no scripts, no external assets, one request. Behind the same bearer auth
as /mcp; a browser logs in at /login (browser_login.py)."""

from __future__ import annotations

import html
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import HTMLResponse

from mcp_offload import __version__
from mcp_offload.core.services import Services
from mcp_offload.gateway.status import render_section
from mcp_offload.mcp_server.extension import Extension
from mcp_offload.proxy.router import ProxyRouter
from mcp_offload.proxy.upstream import UpstreamStatus
from mcp_offload.savings import last_days, summarize
from mcp_offload.savings.record import DaySummary, SavingsRow
from mcp_offload.serve.http.stats_endpoint import GatewayFigures, read_gateway, requested_days
from mcp_offload.store import ScannedOutput
from mcp_offload.web.page import html_page

CHART_W, CHART_H, CHART_PAD = 720, 200, 30
USAGE_TTL_S = 10.0
MIN_REFRESH_S, MAX_REFRESH_S = 5, 3600


def router_of(extensions: Sequence[Extension]) -> ProxyRouter | None:
    """The proxy behind the server's extensions (itself, or behind the lazy-tools front), if any."""
    for ext in extensions:
        candidate = ext if isinstance(ext, ProxyRouter) else getattr(ext, "router", None)
        if isinstance(candidate, ProxyRouter):
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class StoreUsage:
    outputs: int
    bytes: int
    max_outputs: int
    max_bytes: int


class _UsageCache:
    """Store usage for the page: a scan of the whole store, so at most once per USAGE_TTL_S."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._at = -math.inf
        self._value: StoreUsage | None = None

    async def get(self) -> StoreUsage | None:
        scan = getattr(self._services.store, "scan", None)  # every backend is an AdminStore; a test double may not be
        if scan is None:
            return None
        if time.monotonic() - self._at > USAGE_TTL_S:
            outputs: list[ScannedOutput] = await scan()
            limits = self._services.settings
            self._value = StoreUsage(
                len(outputs), sum(o.used_bytes for o in outputs), limits.store_max_outputs, limits.store_max_bytes
            )
            self._at = time.monotonic()
        return self._value


def status_page(
    services: Services, extensions: Sequence[Extension], gateway: GatewayFigures | None = None
) -> Callable[[Request], Awaitable[HTMLResponse]]:
    started = time.time()
    usage = _UsageCache(services)

    async def page(request: Request) -> HTMLResponse:
        days = requested_days(request) or 30
        rows = await services.savings.read(days)
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
        view = PageView(
            statuses=statuses,
            summaries=summaries,
            total=total,
            uptime_s=time.time() - started,
            usage=await usage.get(),
            refresh_s=_refresh(request),
            gateway=section,
        )
        return HTMLResponse(render_page(view), headers={"Cache-Control": "no-store"})

    return page


def _refresh(request: Request) -> int | None:
    raw = request.query_params.get("refresh", "")
    return int(raw) if raw.isdigit() and MIN_REFRESH_S <= int(raw) <= MAX_REFRESH_S else None


@dataclass(frozen=True, slots=True)
class PageView:
    statuses: list[UpstreamStatus] | None
    summaries: list[DaySummary]
    total: SavingsRow
    uptime_s: float = 0.0
    usage: StoreUsage | None = None
    refresh_s: int | None = None
    gateway: str = ""  # the LLM gateway's section (gateway/status.py), when one served through this store


def render_page(view: PageView) -> str:
    summaries, total = view.summaries, view.total
    refresh = f"<meta http-equiv=refresh content={view.refresh_s}>" if view.refresh_s else ""
    toggle = (
        f"auto-refresh every {view.refresh_s} s (<a href=?>stop</a>)"
        if view.refresh_s
        else "<a href=?refresh=30>auto-refresh every 30 s</a>"
    )
    parts = [
        f"<h1>mcp-offload {html.escape(__version__)}</h1>",
        f"<p>Up {_span(view.uptime_s)} · {_usage_line(view.usage)} · {toggle}</p>",
        "<h2>Upstream servers</h2>",
        _upstreams_table(view.statuses),
    ]
    if total.results_seen == 0 and total.retrievals == 0:
        parts.append(
            "<h2>Savings</h2><p class=empty>No data yet: no tool result has gone through this server in the last "
            f"{len(summaries)} days. Figures appear here after the first call.</p>"
        )
    else:
        parts += [
            "<h2>Today</h2>",
            _today_table(summaries[-1] if summaries else None),
            f"<h2>Net tokens saved per day (last {len(summaries)} days)</h2>",
            render_chart(summaries),
            "<p>Total: "
            f"{total.results_offloaded:,} of {total.results_seen:,} results offloaded, "
            f"{total.tokens_kept_out:,} tokens kept out of context, "
            f"{total.tokens_passed_by_handle:,} passed to tools by handle, {total.tokens_retrieved:,} pulled back, "
            f"<strong>{total.tokens_net:,} net saved</strong>. JSON: <a href=stats>/stats</a>.</p>",
        ]
    parts.append(view.gateway)
    return html_page("mcp-offload status", *parts, head=refresh)


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _size(size: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _usage_line(usage: StoreUsage | None) -> str:
    if usage is None:
        return "store usage: not available for this store"
    return (
        f"store: {_size(usage.bytes)} of {_size(usage.max_bytes)} "
        f"({100 * usage.bytes / max(usage.max_bytes, 1):.1f}%), {usage.outputs:,} of {usage.max_outputs:,} outputs"
    )


def _today_table(today: DaySummary | None) -> str:
    if today is None or not today.rows:
        return "<p class=empty>Nothing yet today.</p>"
    rows = [
        f"<table><caption>{html.escape(today.day)} (UTC)</caption><tr><th>server</th><th>tool</th><th>seen</th>"
        "<th>offloaded</th><th>kept out</th><th>by handle</th><th>pulled back</th><th>net saved</th></tr>"
    ]
    for server, tool, row in [*today.rows, ("", "total", today.total)]:
        rows.append(
            f"<tr><td>{html.escape(server or ('' if tool == 'total' else '(direct)'))}</td><td>{html.escape(tool)}</td>"
            f"<td class=n>{row.results_seen:,}</td><td class=n>{row.results_offloaded:,}</td>"
            f"<td class=n>{row.tokens_kept_out:,}</td><td class=n>{row.tokens_passed_by_handle:,}</td>"
            f"<td class=n>{row.tokens_retrieved:,}</td>"
            f"<td class=n>{row.tokens_net:,}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _upstreams_table(statuses: list[UpstreamStatus] | None) -> str:
    if statuses is None:
        return "<p>Not proxying (started without <code>--config</code>).</p>"
    if not statuses:
        return "<p>No upstream servers in the config.</p>"
    rows = [
        "<table><tr><th>server</th><th>transport</th><th>state</th><th>tools</th><th>restarts</th>"
        "<th>last error</th></tr>"
    ]
    now = time.time()
    for s in statuses:
        state = html.escape(s.state)
        when = f" ({_span(now - s.last_error_at)} ago)" if s.last_error and s.last_error_at else ""
        rows.append(
            f"<tr><td>{html.escape(s.name)}</td><td>{html.escape(s.transport)}</td>"
            f"<td class={state}>{state}</td><td class=n>{s.tools}</td><td class=n>{s.restarts}</td>"
            f"<td>{html.escape(s.last_error or '')}{when}</td></tr>"
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
