"""How the server is exposed over HTTP: `HttpOptions` (from the CLI flags and MCP_OFFLOAD_TOKEN), and the
Host/Origin checks (DNS-rebinding protection) handed to the SDK. The exposure flags and the refusal to serve an open
server beyond loopback are the HTTP base's, shared with the gateway (`web/exposure.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from mcp.server.transport_security import TransportSecuritySettings

from mcp_offload.web.exposure import Exposure, RefusedConfig, check_exposure, exposure_from_args
from mcp_offload.web.host_check import exposure_rules

__all__ = [
    "HttpOptions",
    "RefusedConfig",
    "Transport",
    "check_exposure",
    "http_options_from_args",
    "transport_security",
]

Transport = Literal["http", "sse", "both"]


@dataclass(frozen=True, slots=True)
class HttpOptions(Exposure):
    """Everything about serving over HTTP: the exposure (`web/exposure.py`, shared with the gateway) and the MCP
    service's own; `Settings` stays about the store and the tools."""

    transport: Transport = "http"
    stateless: bool = False  # streamable HTTP without sessions (every request stands alone)
    json_response: bool = False  # answer POSTs with plain JSON instead of an SSE stream (no progress relayed)
    max_body_bytes: int = 32 * 1024 * 1024
    max_sessions: int = 1000  # per transport
    session_idle_timeout: float = 30 * 60.0
    shutdown_grace_s: float = 10.0  # how long in-flight calls may run on after SIGTERM
    mcp_path: str = "/mcp"
    sse_path: str = "/sse"
    messages_path: str = "/messages/"
    workers: int = 1  # processes serving the port (web/workers.py)

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0 or self.max_sessions <= 0 or self.session_idle_timeout <= 0:
            raise RefusedConfig("--max-body-bytes, --max-sessions and --session-idle-timeout must be positive")
        if self.workers > 1 and self.transport != "http":
            raise RefusedConfig(
                f"--workers {self.workers} serves --transport http only: an SSE session is one stream held by one "
                "process, and its POSTs to /messages/ could reach another"
            )
        if self.workers > 1 and not self.stateless:
            raise RefusedConfig(
                f"--workers {self.workers} needs --stateless: a handshake-era (2025-11-25) session lives in the "
                "process that opened it, and its next request could reach another worker (2026-07-28 clients are "
                "sessionless either way)"
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
    exposure = exposure_from_args(args, "MCP_OFFLOAD_TOKEN", environ)
    return HttpOptions(
        **{field.name: getattr(exposure, field.name) for field in fields(Exposure)},
        transport=args.transport,
        stateless=args.stateless,
        json_response=args.json_response,
        max_body_bytes=args.max_body_bytes,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
        workers=getattr(args, "workers", 1),
    )
