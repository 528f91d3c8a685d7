"""Who may use an HTTP front end, as one table run against both: the MCP HTTP service and the LLM gateway make the
same Host, Origin and token checks (`web/`), in the same order (Host, then Origin, then the token), with the same
open probe. Only where the token is presented differs (`Authorization: Bearer` for MCP clients, `x-mcp-offload-token`
at the gateway, whose `Authorization` is the provider's), and the refusal's format (each client's own).

The same table decides `HostRules` alike with the MCP SDK's own check, which the SDK's transports make again on /mcp
and /sse with the same lists (`serve/http/options.transport_security`), except where ours is wider on purpose: a
same-origin request on an allowed name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx2
import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from llm_upstream import UpstreamServer
from mcp_offload.core.services import Services
from mcp_offload.serve.http import HttpOptions, transport_security
from mcp_offload.web.host_check import HostRules, exposure_rules
from support.gateway_server import StartGateway
from support.http_transport import TOKEN_A, serving

HOSTS = ("mcp.example.com", "gw.example")
ORIGINS = ("https://app.example.com",)
LOOPBACK = "127.0.0.1:8000"


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    host: str | None
    origin: str | None
    token: str | None  # "right", "wrong" or None (none presented)
    status: int
    path: str = "/stats"
    same_origin: bool = False  # decided by our rule only (the SDK's refuses it: see the module docstring)


TABLE = [
    Case("loopback with the token", LOOPBACK, None, "right", 200),
    Case("no token", LOOPBACK, None, None, 401),
    Case("a wrong token", LOOPBACK, None, "wrong", 401),
    Case("a foreign Host is refused before the token is asked for", "evil.example", None, None, 421),
    Case("a foreign Host with a port", "evil.example:80", None, "right", 421),
    Case("a foreign Host that is a loopback name's prefix", "localhost.evil.example", None, "right", 421),
    Case("a foreign Origin", LOOPBACK, "http://evil.example", "right", 403),
    Case("a foreign Origin is refused before the token is asked for", LOOPBACK, "http://evil.example", None, 403),
    Case("an allowed origin's look-alike", LOOPBACK, "https://app.example.com.evil", "right", 403),
    Case("an allowed name", "mcp.example.com", None, "right", 200),
    Case("an allowed name on a port, and origin", "mcp.example.com:443", "https://app.example.com", "right", 200),
    Case("a loopback origin on any port", LOOPBACK, "http://localhost:3000", "right", 200),
    Case("a loopback origin over https is not one", LOOPBACK, "https://localhost:3000", "right", 403),
    Case("same origin on an allowed name", "gw.example:8000", "http://gw.example:8000", "right", 200, same_origin=True),
    Case("same origin over https", "gw.example", "https://gw.example", "right", 200, same_origin=True),
    Case("same origin on a rebound name", "evil.example:8000", "http://evil.example:8000", "right", 421),
    Case("the health probe is open", "evil.example", "http://evil.example", None, 200, path="/healthz"),
]

Present = Callable[[str], dict[str, str]]


def _check(base: str, present: Present) -> list[str]:
    """Every case of the table against the front end at `base`; the cases that went otherwise."""
    wrong: list[str] = []
    with httpx2.Client(timeout=30) as http:
        for case in TABLE:
            headers = {} if case.token is None else present(TOKEN_A if case.token == "right" else "x" * 32)
            if case.host is not None:
                headers["Host"] = case.host
            if case.origin is not None:
                headers["Origin"] = case.origin
            got = http.get(base + case.path, headers=headers).status_code
            if got != case.status:
                wrong.append(f"{case.name}: {got}, not {case.status}")
    return wrong


async def test_the_mcp_http_service(services: Services) -> None:
    options = HttpOptions(transport="http", tokens=(TOKEN_A,), allowed_hosts=HOSTS, allowed_origins=ORIGINS)
    async with serving(services, options) as base:
        wrong = await _in_thread(base, lambda token: {"Authorization": f"Bearer {token}"})
    assert wrong == []


def test_the_gateway(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    rules = exposure_rules("127.0.0.1", HOSTS, ORIGINS)  # as `mcp-offload gateway --allowed-hosts …` makes them
    assert rules.hosts is not None and rules.origins is not None
    gateway = start_gateway(upstream, tokens=(TOKEN_A,), allowed_hosts=rules.hosts, allowed_origins=rules.origins)
    assert _check(gateway.base_url, lambda token: {"x-mcp-offload-token": token}) == []
    assert not upstream.requests  # none of it reached the provider


async def _in_thread(base: str, present: Present) -> list[str]:
    """`_check` off the event loop that serves the front end."""
    return await anyio.to_thread.run_sync(_check, base, present)


@pytest.mark.parametrize("case", [c for c in TABLE if c.path != "/healthz"], ids=lambda c: c.name)
async def test_the_rules_decide_as_the_mcp_sdk_transports_do(case: Case) -> None:
    security = transport_security(HttpOptions(allowed_hosts=HOSTS, allowed_origins=ORIGINS))
    rules = exposure_rules("127.0.0.1", HOSTS, ORIGINS)
    ours = rules.refusal(case.host, case.origin)
    headers = [(k, v.encode()) for k, v in ((b"host", case.host), (b"origin", case.origin)) if v is not None]
    sdk = await TransportSecurityMiddleware(security).validate_request(Request({"type": "http", "headers": headers}))
    assert (ours.status if ours else 200) == (case.status if case.status != 401 else 200)
    if case.same_origin:
        assert sdk is not None and sdk.status_code == 403  # the SDK's transports refuse it on /mcp and /sse
    else:
        assert (sdk.status_code if sdk else 200) == (ours.status if ours else 200)


def test_a_request_without_host_and_the_checks_turned_off() -> None:
    rules = exposure_rules("127.0.0.1", (), ())
    refused = rules.refusal(None, None)
    assert refused is not None and refused.status == 421
    assert exposure_rules("0.0.0.0", ("*",), ()) == HostRules(hosts=None, origins=None)
    # without a Host check, no same-origin pass either: the Host it would vouch for is unchecked
    assert HostRules(hosts=None, origins=()).refusal("evil.example", "http://evil.example") is not None
