"""Who may reach an HTTP front end: the exposure flags both take (--host, --port, --token, --allow-open,
--allowed-hosts, --allowed-origins) read into an `Exposure`, and the refusal to serve an open (tokenless) server
beyond loopback unless the operator said so. It imports no MCP and no front end, so a command that only reads its
flags (`mcp-offload gateway --help`, a refused flag) does not pay for either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_offload.errors import OperatorError
from mcp_offload.web.host_check import is_loopback
from mcp_offload.web.token_check import parse_tokens


class RefusedConfig(OperatorError):
    """A network configuration the server will not start with (the message says what to change)."""


@dataclass(frozen=True, slots=True)
class Exposure:
    """Where a front end listens and who may use it (the Host/Origin rules come from it: `exposure_rules`)."""

    host: str = "127.0.0.1"
    port: int = 8765
    tokens: tuple[str, ...] = ()
    allow_open: bool = False
    allowed_hosts: tuple[str, ...] = ()  # extra Host values (reverse proxy names); "*" turns Host/Origin checks off
    allowed_origins: tuple[str, ...] = ()


class Exposed(Protocol):
    """What the refusal looks at: an `Exposure`, or a front end's options that carry one's fields."""

    @property
    def host(self) -> str: ...
    @property
    def tokens(self) -> tuple[str, ...]: ...
    @property
    def allow_open(self) -> bool: ...


def check_exposure(options: Exposed, token_env: str = "MCP_OFFLOAD_TOKEN") -> None:
    """Refuse to serve an open (tokenless) server beyond loopback unless the operator said so explicitly; the
    message names the front end's token variable (`token_env`)."""
    if not is_loopback(options.host) and not options.tokens and not options.allow_open:
        raise RefusedConfig(
            f"refusing to listen on {options.host} without a token: anyone who can reach it could read every "
            f"output. Set --token (or {token_env}), or pass --allow-open if this network is trusted."
        )


def exposure_from_args(args: Any, token_env: str, environ: Mapping[str, str] | None = None) -> Exposure:
    """The exposure flags and the tokens in `token_env` (comma-separated); refused (RefusedConfig) when a token is
    malformed or an open server beyond loopback is not opted into."""
    env = os.environ if environ is None else environ
    try:
        tokens = parse_tokens([*args.token, env.get(token_env, "")])
    except ValueError as exc:
        raise RefusedConfig(str(exc)) from None
    exposure = Exposure(
        host=args.host,
        port=args.port,
        tokens=tokens,
        allow_open=args.allow_open,
        allowed_hosts=_split(args.allowed_hosts),
        allowed_origins=_split(args.allowed_origins),
    )
    check_exposure(exposure, token_env)
    return exposure


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())
