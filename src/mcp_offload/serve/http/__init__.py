"""Serving over the network: streamable HTTP at /mcp and SSE at /sse + /messages/, from one process, with /healthz.

What this package adds around the SDK transports, and where (the HTTP base it shares with the gateway is `web/`):

- **Who may connect** (`auth.py`, `options.py`): an optional bearer token per principal (`web/token_check.py`);
  binding a non-loopback address without one is refused unless the operator says `allow_open`. Host/Origin checks
  (DNS-rebinding protection, `web/host_check.py`) are on by default and configurable for reverse proxies. Refusals
  read as JSON-RPC errors (`refusals.py`).
- **Isolation** (`app.py`): `ConnectionScope` (mcp_server/scoping.py) gives every handshake-era session its own store
  scope and 2026-07-28 requests the principal's scope (or the anonymous, non-enumerable one).
- **Limits with clear errors**: body size (`web/body_limit.py`: 413, JSON-RPC body), open sessions (503), idle
  sessions expire (the SDK does it for streamable HTTP; `sse_expiry.py` does it for SSE, whose transport has no such
  knob).
- **Graceful shutdown** (`run.py`, `web/server.py`): on SIGTERM stop accepting, refuse new MCP requests
  (`shutdown_gate.py`), let in-flight ones finish (`in_flight.py`, bounded by a grace period), then close the
  long-lived SSE streams and stop; the caller closes the services afterwards.
- **Logs** (`logs.py`): JSON lines on stderr; at INFO one per HTTP request (`web/access_log.py`,
  `mcp_offload.serve.http`) and one per MCP request (`request_log.py`, `mcp_offload.requests`: method, tool, outcome,
  ms, principal fingerprint); tokens never appear.

Inside this package, import its modules absolutely (`mcp_offload.serve.http.…`): a bare `import http` means
the stdlib's.
"""

from __future__ import annotations

from mcp_offload.serve.http.app import HttpApp, build_http_app
from mcp_offload.serve.http.options import (
    HttpOptions,
    RefusedConfig,
    check_exposure,
    http_options_from_args,
    transport_security,
)
from mcp_offload.serve.http.run import run_http, serve_http

__all__ = [
    "HttpApp",
    "HttpOptions",
    "RefusedConfig",
    "build_http_app",
    "check_exposure",
    "http_options_from_args",
    "run_http",
    "serve_http",
    "transport_security",
]
