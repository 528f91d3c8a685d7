"""Who may use the gateway, from the command line's flags to the answer: Host/Origin patterns as the HTTP service
computes them (loopback names, the bound address, --allowed-hosts; '*' turns the checks off), tokens from flags and
the environment (short ones refused), and the refusals themselves (the gateway's checks, `access.guarded`, in front
of an app that answers 200)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import MutableMapping
from typing import Any

import pytest
from starlette.responses import PlainTextResponse

from mcp_offload.cli.gateway import TOKEN_ENV, add_parser, options_from_args, settings_from_args
from mcp_offload.errors import OperatorError
from mcp_offload.gateway.access import guarded
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.web.drain import Drain

TOKEN = "t" * 32


@dataclasses.dataclass
class _Refused:
    status: int


class GatewayAccess:
    """The gateway's checks for `tokens` and the Host/Origin patterns: `refusal(headers)` is None when the request
    gets through, else its status."""

    def __init__(self, tokens: tuple[str, ...], hosts: tuple[str, ...], origins: tuple[str, ...]) -> None:
        options = GatewayOptions(tokens=tokens, allowed_hosts=hosts, allowed_origins=origins)
        self.app = guarded(PlainTextResponse("through"), options, Drain())

    def refusal(self, headers: dict[str, str]) -> _Refused | None:
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/v1/models", "query_string": b"",
                 "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}  # fmt: skip

        async def call() -> None:
            await self.app(scope, receive, send)

        asyncio.run(call())
        status = sent[0]["status"]
        return None if status == 200 else _Refused(status)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["gateway", *argv])


def test_loopback_defaults_check_host_and_origin() -> None:
    options = options_from_args(_args(), environ={})
    access = GatewayAccess(options.tokens, options.allowed_hosts, options.allowed_origins)
    assert access.refusal({"host": "127.0.0.1:8788"}) is None
    assert access.refusal({"host": "localhost:8788", "origin": "http://localhost:3000"}) is None
    refused = access.refusal({"host": "attacker.example:8788"})
    assert refused is not None and refused.status == 421
    refused = access.refusal({"host": "127.0.0.1:8788", "origin": "https://attacker.example"})
    assert refused is not None and refused.status == 403


def test_star_turns_the_checks_off_and_extra_hosts_are_added() -> None:
    open_checks = options_from_args(_args("--allowed-hosts", "*"), environ={})
    access = GatewayAccess((), open_checks.allowed_hosts, open_checks.allowed_origins)
    assert access.refusal({"host": "anything.example", "origin": "https://anywhere.example"}) is None
    named = options_from_args(_args("--allowed-hosts", "gw.internal"), environ={})
    access = GatewayAccess((), named.allowed_hosts, named.allowed_origins)
    assert access.refusal({"host": "gw.internal:8788"}) is None and access.refusal({"host": "gw.internal"}) is None


def test_tokens_from_flags_and_environment() -> None:
    options = options_from_args(_args("--token", TOKEN), environ={TOKEN_ENV: "u" * 32 + ",v" + "w" * 31})
    assert len(options.tokens) == 3
    access = GatewayAccess(options.tokens, (), ())
    assert access.refusal({"x-mcp-offload-token": "u" * 32}) is None
    assert access.refusal({"proxy-authorization": "Bearer " + TOKEN}) is None
    for headers in ({}, {"x-mcp-offload-token": "wrong" * 8}, {"authorization": "Bearer " + TOKEN},
                    {"proxy-authorization": "Basic " + TOKEN}):  # fmt: skip
        refused = access.refusal(headers)
        assert refused is not None and refused.status == 401
    with pytest.raises(OperatorError, match="at least 16"):
        options_from_args(_args("--token", "short"), environ={})
    with pytest.raises(OperatorError, match="token"):
        options_from_args(_args("--host", "0.0.0.0"), environ={})
    assert options_from_args(_args("--host", "0.0.0.0", "--token", TOKEN), environ={}).host == "0.0.0.0"


def test_the_cache_breakpoints_setting_from_the_environment_and_the_flags() -> None:
    off = {"MCP_OFFLOAD_GATEWAY_CACHE_BREAKPOINTS": "0"}
    assert settings_from_args(_args(), environ={}).gateway_cache_breakpoints is True  # on by default
    assert settings_from_args(_args(), environ=off).gateway_cache_breakpoints is False
    assert settings_from_args(_args("--gateway-cache-breakpoints"), environ=off).gateway_cache_breakpoints is True
    assert settings_from_args(_args("--no-gateway-cache-breakpoints"), environ={}).gateway_cache_breakpoints is False
