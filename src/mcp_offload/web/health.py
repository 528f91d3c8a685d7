"""`GET /healthz`: ready or draining, for load balancers and supervisors (open: no token, no Host check; it says
nothing but the state, the version and what the front end adds)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_offload.version import __version__
from mcp_offload.web.drain import Drain


def health_endpoint(
    drain: Drain, more: Callable[[], Mapping[str, Any]] | None = None
) -> Callable[[Request], Awaitable[JSONResponse]]:
    """200 `{"status": "ok", "version", …more}`, or 503 with `"status": "draining"` once shutdown has begun."""

    async def healthz(request: Request) -> JSONResponse:
        body = {"status": "draining" if drain.draining else "ok", "version": __version__}
        if more is not None:
            body.update(more())
        return JSONResponse(body, status_code=503 if drain.draining else 200)

    return healthz
