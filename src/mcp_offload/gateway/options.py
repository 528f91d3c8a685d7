"""`GatewayOptions`: everything about serving the gateway (where to listen, who may use it, the upstreams, the
retrieval loop, limits). The CLI fills it (cli side: `cli/gateway.py`); `GatewayApp` reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.errors import OperatorError
from mcp_offload.gateway.upstream import ProviderConfig

DEFAULT_PORT = 8788


class GatewayConfigError(OperatorError):
    """A gateway configuration that cannot work (the message says what to change)."""


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """The transparent retrieval loop's limits (loop.py)."""

    max_loops: int = 4  # follow-up calls with tools allowed; the one after them allows none
    ping_interval_s: float = 5.0  # keep-alives while the gateway runs retrieval calls and waits for a follow-up


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tokens: tuple[str, ...] = ()  # who may use the gateway (x-mcp-offload-token / Proxy-Authorization: Bearer)
    allowed_hosts: tuple[str, ...] = ()  # Host header patterns ("name", "name:*"); empty: no Host check
    allowed_origins: tuple[str, ...] = ()  # Origin patterns; a request without Origin always passes
    max_body_bytes: int = 32 * 1024 * 1024  # the Messages API's own request limit
    upstream: ProviderConfig = field(default_factory=ProviderConfig)
    policy: RewritePolicy = field(default_factory=RewritePolicy)
    limits: LoopLimits = field(default_factory=LoopLimits)
    shutdown_grace_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0:
            raise GatewayConfigError("--max-body-bytes must be positive")
        if self.limits.max_loops < 0 or self.limits.ping_interval_s <= 0:
            raise GatewayConfigError("--max-loops must be 0 or more and --ping-interval positive")
        for url in self.upstream.bases.values():
            if url is not None and not url.startswith(("http://", "https://")):
                raise GatewayConfigError(f"upstream URL {url!r} must start with http:// or https://")
