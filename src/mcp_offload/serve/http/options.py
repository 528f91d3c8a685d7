"""How the server is exposed over HTTP: `HttpOptions` (from the CLI flags and MCP_OFFLOAD_TOKEN), the refusal to
serve an open server beyond loopback, and the Host/Origin checks (DNS-rebinding protection) handed to the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.transport_security import TransportSecuritySettings

from mcp_offload.errors import OperatorError
from mcp_offload.web.host_check import exposure_rules, is_loopback
from mcp_offload.web.token_check import parse_tokens

Transport = Literal["http", "sse", "both"]


class RefusedConfig(OperatorError):
    """A network configuration the server will not start with (the message says what to change)."""


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """Everything about serving over HTTP; `Settings` stays about the store and the tools."""

    transport: Transport = "http"
    host: str = "127.0.0.1"
    port: int = 8765
    tokens: tuple[str, ...] = ()
    allow_open: bool = False
    allowed_hosts: tuple[str, ...] = ()  # extra Host values (reverse proxy names); "*" turns Host/Origin checks off
    allowed_origins: tuple[str, ...] = ()
    stateless: bool = False  # streamable HTTP without sessions (every request stands alone)
    json_response: bool = False  # answer POSTs with plain JSON instead of an SSE stream (no progress relayed)
    max_body_bytes: int = 32 * 1024 * 1024
    max_sessions: int = 1000  # per transport
    session_idle_timeout: float = 30 * 60.0
    shutdown_grace_s: float = 10.0  # how long in-flight calls may run on after SIGTERM
    mcp_path: str = "/mcp"
    sse_path: str = "/sse"
    messages_path: str = "/messages/"

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0 or self.max_sessions <= 0 or self.session_idle_timeout <= 0:
            raise RefusedConfig("--max-body-bytes, --max-sessions and --session-idle-timeout must be positive")


def check_exposure(options: HttpOptions) -> None:
    """Refuse to serve an open (tokenless) server beyond loopback unless the operator said so explicitly."""
    if not is_loopback(options.host) and not options.tokens and not options.allow_open:
        raise RefusedConfig(
            f"refusing to listen on {options.host} without a token: anyone who can reach it could read every "
            "output. Set --token (or MCP_OFFLOAD_TOKEN), or pass --allow-open if this network is trusted."
        )


def transport_security(options: HttpOptions) -> TransportSecuritySettings:
    """DNS-rebinding protection for the SDK's transports: the rules every route of the service is checked by
    (`web.host_check.exposure_rules`: loopback names always, the bound address, plus what the operator allows)."""
    rules = exposure_rules(options.host, options.allowed_hosts, options.allowed_origins)
    if rules.hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=list(rules.hosts), allowed_origins=list(rules.origins or ())
    )


def http_options_from_args(args: Any, environ: dict[str, str] | None = None) -> HttpOptions:
    """HttpOptions from the CLI flags (cli/dispatch.py) and MCP_OFFLOAD_TOKEN (comma-separated tokens)."""
    return exposure_from_args(
        args,
        "MCP_OFFLOAD_TOKEN",
        environ,
        transport=args.transport,
        stateless=args.stateless,
        json_response=args.json_response,
        max_body_bytes=args.max_body_bytes,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
    )


def exposure_from_args(args: Any, token_env: str, environ: Mapping[str, str] | None = None, **more: Any) -> HttpOptions:
    """HttpOptions from the exposure flags every HTTP server of this package takes (--host, --port, --token,
    --allow-open, --allowed-hosts, --allowed-origins) and the tokens in `token_env` (comma-separated), plus the
    `more` fields; refused (RefusedConfig) when a token is malformed or the exposure is not opted into."""
    env = os.environ if environ is None else environ
    try:
        tokens = parse_tokens([*args.token, env.get(token_env, "")])
    except ValueError as exc:
        raise RefusedConfig(str(exc)) from None
    options = HttpOptions(
        host=args.host,
        port=args.port,
        tokens=tokens,
        allow_open=args.allow_open,
        allowed_hosts=_split(args.allowed_hosts),
        allowed_origins=_split(args.allowed_origins),
        **more,
    )
    check_exposure(options)
    return options


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())
