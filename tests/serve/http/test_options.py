"""Exposure (http/options.py): Host/Origin checks (421/403), the security settings handed to the SDK, and the
refusal to start an open server beyond loopback (also through the real CLI).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from mcp_offload.core.services import Services
from mcp_offload.serve.http import HttpOptions, RefusedConfig, check_exposure, transport_security
from support.http_transport import (
    INIT,
    MCP_HEADERS,
    TOKEN_A,
    serving,
)


async def test_host_and_origin_checks(services: Services) -> None:
    options = HttpOptions(
        transport="both", allowed_hosts=("mcp.example.com",), allowed_origins=("https://app.example.com",)
    )
    async with serving(services, options) as base, httpx2.AsyncClient(timeout=10) as http:
        cases = [
            ({"Host": "evil.example"}, 421),
            ({"Host": "evil.example:80"}, 421),
            ({"Origin": "http://evil.example"}, 403),
            ({"Origin": "https://app.example.com.evil"}, 403),
            ({"Host": "mcp.example.com"}, 200),
            ({"Host": "mcp.example.com:443", "Origin": "https://app.example.com"}, 200),
            ({"Origin": "http://localhost:3000"}, 200),
        ]
        for headers, status in cases:
            r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, **headers})
            assert r.status_code == status, (headers, r.status_code, r.text)
            if status != 200:  # SSE: the GET stream is refused the same way
                r = await http.get(base + "/sse", headers=headers)
                assert r.status_code == status, (headers, r.status_code)
        r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, "Host": "evil.example"})
        assert "mcp-session-id" not in r.headers


@pytest.mark.parametrize("tokens", [(), (TOKEN_A,)], ids=["tokenless", "token"])
async def test_every_route_but_healthz_checks_host_and_origin(services: Services, tokens: tuple[str, ...]) -> None:
    """A page on a rebound name must not read the status page, /stats or the login route (421 / 403 before auth)."""
    auth = {"Authorization": f"Bearer {TOKEN_A}"} if tokens else {}
    options = HttpOptions(transport="http", tokens=tokens)
    async with serving(services, options) as base, httpx2.AsyncClient(timeout=10) as http:
        for path in ("/", "/stats", "/stats?days=3", "/login", "/nowhere"):
            foreign = await http.get(base + path, headers={"Host": "evil.example", **auth})
            assert foreign.status_code == 421, (path, foreign.status_code)
            assert "tokens" not in foreign.text and "<html" not in foreign.text
            cross = await http.get(base + path, headers={"Origin": "http://evil.example", **auth})
            assert cross.status_code == 403, (path, cross.status_code)
        assert (await http.get(base + "/stats", headers=auth)).status_code == 200
        assert (await http.get(base + "/healthz", headers={"Host": "10.0.0.7:8765"})).status_code == 200


def test_security_settings_and_exposure() -> None:
    open_lan = HttpOptions(host="0.0.0.0")
    with pytest.raises(RefusedConfig, match="without a token"):
        check_exposure(open_lan)
    check_exposure(HttpOptions(host="0.0.0.0", allow_open=True))
    check_exposure(HttpOptions(host="0.0.0.0", tokens=(TOKEN_A,)))
    check_exposure(HttpOptions(host="::1"))
    settings = transport_security(HttpOptions(host="10.1.2.3", allowed_hosts=("mcp.example.com",)))
    assert settings.enable_dns_rebinding_protection
    assert {"10.1.2.3:*", "mcp.example.com", "mcp.example.com:*", "localhost:*"} <= set(settings.allowed_hosts)
    assert not transport_security(HttpOptions(allowed_hosts=("*",))).enable_dns_rebinding_protection


def test_cli_refuses_unsafe_configurations(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "mcp_offload", "--store", str(tmp_path / "s"), "--transport", "http"]
    env = {k: v for k, v in os.environ.items() if k != "MCP_OFFLOAD_TOKEN"}
    for extra, message in [
        (["--host", "0.0.0.0"], "refusing to listen on 0.0.0.0 without a token"),
        (["--token", "short"], "at least 16 characters"),
        (["--max-sessions", "0"], "must be positive"),
    ]:
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 2 and message in done.stderr, (extra, done.stderr)
