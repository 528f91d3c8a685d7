"""`GET /stats`: the durable savings figures as JSON (the document `mcp-offload stats --json` prints), behind the
same bearer auth as /mcp. `?days=N` (1-400, default 30) chooses how many UTC days back, today included. With a
`gateway` source, the document also holds the LLM gateway's per-session figures under "gateway" (null when its
record cannot be read), as `mcp-offload stats --json` prints them."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_offload.savings import SavingsRecord, last_days, summary_json
from mcp_offload.savings.record import MAX_DAYS

DEFAULT_DAYS = 30
log = logging.getLogger("mcp_offload.http")


def requested_days(request: Request, default: int = DEFAULT_DAYS) -> int | None:
    """`?days=` as an int in range, the default when absent, None when malformed."""
    raw = request.query_params.get("days")
    if raw is None:
        return default
    try:
        days = int(raw)
    except ValueError:
        return None
    return days if 1 <= days <= MAX_DAYS else None


GatewayFigures = Callable[[], Awaitable[dict[str, Any]]]  # the LLM gateway's per-session figures (gateway/status.py)


async def read_gateway(gateway: GatewayFigures) -> dict[str, Any] | None:
    """The gateway's figures, or None when its record cannot be read (a Redis outage must not fail the page)."""
    try:
        return await gateway()
    except Exception as exc:
        log.warning("could not read the gateway's figures: %s", exc)
        return None


def stats_endpoint(
    record: SavingsRecord, gateway: GatewayFigures | None = None
) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def stats(request: Request) -> JSONResponse:
        days = requested_days(request)
        if days is None:
            return JSONResponse({"error": f"days must be an integer from 1 to {MAX_DAYS}"}, status_code=400)
        rows = await record.read(days)
        document: dict[str, Any] = summary_json(rows, last_days(days, time.time()))
        if gateway is not None:
            document["gateway"] = await read_gateway(gateway)
        return JSONResponse(document)

    return stats
