"""/stats (JSON) and the status page at / over real HTTP on loopback: the same figures as `stats --json`, the
upstreams' states, the SVG chart, behind the bearer auth; and, where chromium is installed, a real browser render."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx2
import mcp.types as types
import pytest

from mcp_offload.core.services import Services
from mcp_offload.serve.http import HttpOptions
from mcp_offload.store.fs import FilesystemStore
from support.http_transport import TOKEN_A, connect, serving
from support.proxy import fixture_entry, running_proxy

AUTH = {"Authorization": f"Bearer {TOKEN_A}"}


async def test_stats_and_page_show_the_recorded_savings_behind_auth(services: Services) -> None:
    config = {"mcpServers": {"fix": fixture_entry(), "broken": {"command": "/nonexistent/server"}}}
    async with running_proxy(services, config) as server:
        router = server.router  # set by running_proxy
        options = HttpOptions(transport="http", tokens=(TOKEN_A,))
        async with serving(services, options, [router]) as base:
            async with connect(base, "http", "legacy", TOKEN_A) as client:
                big = await client.call_tool("fix__json", {"n": 3000})  # large: offloaded
                await client.call_tool("fix__echo", {"name": "small"})  # passed through
                uri = next(str(b.uri) for b in big.content if isinstance(b, types.ResourceLink))
                await client.call_tool("fix__env", {"name": uri})  # the stored output passed as an argument
            async with httpx2.AsyncClient(timeout=30) as http:
                for path in ("/stats", "/", "/stats?days=3"):
                    refused = await http.get(base + path)
                    assert refused.status_code == 401, path
                stats = (await http.get(base + "/stats?days=3", headers=AUTH)).json()
                bad = await http.get(base + "/stats?days=0", headers=AUTH)
                page = await http.get(base + "/", headers=AUTH)
    assert bad.status_code == 400
    assert len(stats["days"]) == 3
    rows = {(r["server"], r["tool"]): r for r in stats["days"][-1]["rows"]}
    assert rows[("fix", "json")]["results_offloaded"] == 1 and rows[("fix", "json")]["tokens_kept_out"] > 10_000
    assert rows[("fix", "echo")] == {
        "server": "fix",
        "tool": "echo",
        "results_seen": 1,
        "results_offloaded": 0,
        "tokens_kept_out": 0,
        "retrievals": 0,
        "tokens_retrieved": 0,
        "arguments_by_handle": 0,
        "tokens_passed_by_handle": 0,
        "tokens_net_saved": 0,
    }
    passed = rows[("fix", "env")]["tokens_passed_by_handle"]
    assert rows[("fix", "env")]["arguments_by_handle"] == 1 and passed > 10_000
    assert stats["total"]["tokens_net_saved"] == rows[("fix", "json")]["tokens_kept_out"] + passed
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    body = page.text
    assert "<script" not in body and "http://" not in body.replace("http://www.w3.org/2000/svg", "")
    assert "<td>fix</td><td>stdio</td><td class=ready>ready</td>" in body
    assert "<td>broken</td>" in body and "class=ready>ready</td><td class=n>0" not in body
    assert "<th>kept out</th><th>by handle</th><th>pulled back</th>" in body
    kept = rows[("fix", "json")]["tokens_kept_out"]
    assert (
        f"<td>fix</td><td>env</td><td class=n>1</td><td class=n>0</td><td class=n>0</td><td class=n>{passed:,}</td>"
        in body
    )
    assert f"{kept:,} tokens kept out of context, {passed:,} passed to tools by handle, 0 pulled back" in body
    svg = body[body.index("<svg") : body.index("</svg>") + 6]
    bars = ET.fromstring(svg).findall("{http://www.w3.org/2000/svg}rect")
    assert len(bars) == 30  # one per day of the default window
    assert f"{stats['total']['tokens_net_saved']:,} tokens net" in svg
    assert float(bars[-1].get("height", "0")) > float(bars[0].get("height", "0"))  # today's bar, not an empty day


async def test_the_page_without_a_proxy(services: Services, tmp_path: Path) -> None:
    async with serving(services, HttpOptions(transport="http")) as base, httpx2.AsyncClient(timeout=30) as http:
        page = await http.get(base + "/")
        stats = await http.get(base + "/stats")
    assert "Not proxying" in page.text
    assert stats.json()["total"]["results_seen"] == 0


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


async def test_the_page_renders_in_a_real_browser(services: Services, tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("BROWSER TEST SKIPPED: chromium is not installed (apt-get install chromium)")
    async with serving(services, HttpOptions(transport="http")) as base:
        async with connect(base, "http", "legacy") as client:
            await client.call_tool("offload", {"content": "word " * 20_000})
        shot = tmp_path / "page.png"
        dom = await _run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", base + "/"], tmp_path)
        await _run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
             "--window-size=900,700", base + "/"],
            tmp_path,
        )  # fmt: skip
    assert "net tokens saved per day" in dom and "<rect" in dom
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000  # a real, non-blank render


async def test_a_browser_logs_in_to_the_status_page_of_a_server_with_a_token(
    services: Services, tmp_path: Path
) -> None:
    """Headless Chromium: without a credential `/` is an HTML login page (401); the login link sets the cookie and
    lands on the page itself. The cookie is HttpOnly and SameSite=Strict, is not the token, and opens only the
    status routes, never /mcp."""
    browser = _chromium()
    if browser is None:
        pytest.skip("BROWSER TEST SKIPPED: chromium is not installed (apt-get install chromium)")
    options = HttpOptions(transport="http", tokens=(TOKEN_A,))
    async with serving(services, options) as base:
        async with connect(base, "http", "legacy", TOKEN_A) as client:
            await client.call_tool("offload", {"content": "word " * 20_000})
        flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
        locked = await _run([*flags, "--dump-dom", base + "/"], tmp_path)
        page = await _run([*flags, "--dump-dom", f"{base}/login?token={TOKEN_A}"], tmp_path)
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as http:
            anonymous = await http.get(base + "/")
            form = await http.post(
                base + "/login",
                content=f"token={TOKEN_A}",
                headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": base},
            )
            wrong = await http.post(base + "/login", content="token=" + "x" * 32, headers={"Origin": base})
            cookie = form.headers["set-cookie"]
            value = cookie.split(";", 1)[0].split("=", 1)[1]
            jar = {"Cookie": f"mcp_offload_status={value}"}
            with_cookie = await http.get(base + "/", headers=jar)
            stats_with_cookie = await http.get(base + "/stats", headers=jar)
            mcp_with_cookie = await http.post(
                base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=jar
            )
            forged = await http.get(base + "/", headers={"Cookie": "mcp_offload_status=" + value[:-4] + "0000"})
            cross_site = await http.post(
                base + "/login", content=f"token={TOKEN_A}", headers={"Origin": "http://evil.example"}
            )
    assert "Log in to see this server's status" in locked and "net tokens saved" not in locked
    assert "net tokens saved per day" in page and "<rect" in page and "Today" in page  # logged in, on the page
    assert anonymous.status_code == 401 and anonymous.headers["content-type"].startswith("text/html")
    assert '<form method="post" action="/login">' in anonymous.text or "<form method=post" in anonymous.text
    assert form.status_code == 303 and form.headers["location"] == "/"
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Path=/" in cookie
    assert TOKEN_A not in cookie
    assert wrong.status_code == 401 and "not valid" in wrong.text and "set-cookie" not in wrong.headers
    assert with_cookie.status_code == 200 and "Upstream servers" in with_cookie.text
    assert stats_with_cookie.status_code == 200 and stats_with_cookie.json()["total"]["results_seen"] >= 1
    assert mcp_with_cookie.status_code == 401  # the cookie reads the status, it does not speak MCP
    assert forged.status_code == 401
    assert cross_site.status_code == 403


async def test_the_page_shows_uptime_usage_today_and_no_data_yet(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_offload.serve.http import status_page

    monkeypatch.setattr(status_page, "USAGE_TTL_S", 0.0)  # the store scan is cached 10 s; here each view is fresh
    async with serving(services, HttpOptions(transport="http")) as base, httpx2.AsyncClient(timeout=30) as http:
        empty = (await http.get(base + "/?refresh=30")).text
        async with connect(base, "http", "legacy") as client:
            await client.call_tool("offload", {"content": "word " * 20_000, "name": "words"})
        full = (await http.get(base + "/")).text
        bad_refresh = (await http.get(base + "/?refresh=1")).text
    assert "No data yet" in empty and "<svg" not in empty
    assert "<meta http-equiv=refresh content=30>" in empty and "auto-refresh every 30 s" in empty
    assert "http-equiv=refresh" not in full and "http-equiv=refresh" not in bad_refresh
    assert "Up " in full and "store: " in full and "1 of 10,000 outputs" in full
    today = full[full.index("<h2>Today</h2>") : full.index("<h2>Net tokens")]
    assert "<td>(direct)</td><td>offload</td><td class=n>1</td><td class=n>1</td>" in today


async def test_the_store_usage_counts_the_search_indexes_kept_with_outputs(services: Services) -> None:
    """The page's store figure is what the quotas count: content plus the sidecars kept with each output."""
    from support.store import SCOPE_A, put_bytes

    store = services.store
    assert isinstance(store, FilesystemStore)
    handle = await put_bytes(store, SCOPE_A, b"x" * 4096)
    assert store.sidecar(SCOPE_A, handle, "passages").write([b"i" * 2048])
    async with serving(services, HttpOptions(transport="http")) as base, httpx2.AsyncClient(timeout=30) as http:
        page = (await http.get(base + "/")).text
    assert "store: 6.0 KiB of 4.0 GiB" in page and "1 of 10,000 outputs" in page


async def _run(argv: list[str], home: Path) -> str:
    import anyio

    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"HOME": str(home)}, check=False)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
