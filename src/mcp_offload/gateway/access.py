"""Who may use the gateway, checked by the shared middleware of `web/` before a request's body is read: its Host
and Origin (the MCP HTTP service's rules, `web/host_check.py`), its own token, and how a refusal is answered.

- Token (optional): `x-mcp-offload-token: T` or `Proxy-Authorization: Bearer T`; on the compression service's paths
  also `Authorization: Bearer T` (what the guardrails that call it send). Elsewhere `Authorization` and `x-api-key`
  are the provider's credentials and pass through untouched. A request that presents a configured token in any of
  these places is admitted.
- Open without a token or a Host check: the health probes, `GET /healthz` and the compression service's
  `GET /health` (GET only: every other method on a path is relayed, and must not bypass the checks).
- Refusals (`gateway_refusal`) are in the provider's error document for the API called (a relayed path: the
  provider it goes to), or the compression service's own on its paths, so each client's SDK raises its ordinary
  error.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import ASGIApp, Scope

from mcp_offload.gateway.asgi import incoming_request
from mcp_offload.gateway.compress_api import is_compress_path
from mcp_offload.gateway.errors import GatewayError, answering, error_response, own_error_body
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.web.body_limit import BodyLimit
from mcp_offload.web.drain import Drain, DrainGate
from mcp_offload.web.host_check import HostOriginCheck, HostRules
from mcp_offload.web.refusal import TOKEN_INVALID, TOKEN_MISSING, Refusal
from mcp_offload.web.token_check import TokenGate, TokenPlaces, header_tokens

OPEN_PATHS = ("GET /healthz", "GET /health")
NEEDS_TOKEN = (
    "This mcp-offload gateway needs its token: send 'x-mcp-offload-token: <token>' (or "
    "'Proxy-Authorization: Bearer <token>'); Authorization and x-api-key go to the provider."
)
_PLACES = ((b"x-mcp-offload-token", False), (b"proxy-authorization", True))
_GATEWAY_PLACES = header_tokens(*_PLACES)
_COMPRESS_PLACES = header_tokens(*_PLACES, (b"authorization", True))


def _presented(scope: Scope) -> list[bytes]:
    return (_COMPRESS_PLACES if is_compress_path(scope["path"]) else _GATEWAY_PLACES)(scope)


GATEWAY_TOKEN = TokenPlaces(read=_presented, missing=NEEDS_TOKEN, invalid=NEEDS_TOKEN)


def guarded(app: ASGIApp, options: GatewayOptions, drain: Drain) -> ASGIApp:
    """`app` behind the gateway's checks, outermost first: Host/Origin, token, drain, body cap."""
    app = BodyLimit(app, options.max_body_bytes, gateway_refusal)
    app = DrainGate(app, drain, gateway_refusal, open_paths=OPEN_PATHS)
    if options.tokens:
        app = TokenGate(app, options.tokens, GATEWAY_TOKEN, gateway_refusal, open_paths=OPEN_PATHS)
    rules = host_rules(options.allowed_hosts, options.allowed_origins)
    return HostOriginCheck(app, rules, gateway_refusal, open_paths=OPEN_PATHS)


def host_rules(allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...]) -> HostRules:
    """`GatewayOptions`' Host and Origin patterns as rules: no Host patterns, no Host check; `*` among the origins,
    no Origin check."""
    return HostRules(hosts=allowed_hosts or None, origins=None if "*" in allowed_origins else allowed_origins)


def gateway_refusal(scope: Scope, refusal: Refusal) -> ASGIApp:
    """The gateway's `Refuse` (see the module docstring); a missing or wrong token is `gateway_unauthorized`."""
    code = "gateway_unauthorized" if refusal.code in (TOKEN_MISSING, TOKEN_INVALID) else refusal.code
    error = GatewayError(refusal.status, code, refusal.message)
    if is_compress_path(scope["path"]):
        return Response(own_error_body(error), refusal.status, media_type="application/json")
    status, headers, body = error_response(*answering(incoming_request(scope)), error)
    return Response(body, status, headers={k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
