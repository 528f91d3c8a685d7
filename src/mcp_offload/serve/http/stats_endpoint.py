"""`GET /stats`: the durable savings figures as JSON (the document `mcp-offload stats --json` prints), behind the
same bearer auth as /mcp. `?days=N` (1-400, default 30) chooses how many UTC days back, today included."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_offload.savings import SavingsRecord, last_days, summary_json
from mcp_offload.savings.record import MAX_DAYS

DEFAULT_DAYS = 30


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


def stats_endpoint(record: SavingsRecord) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def stats(request: Request) -> JSONResponse:
        days = requested_days(request)
        if days is None:
            return JSONResponse({"error": f"days must be an integer from 1 to {MAX_DAYS}"}, status_code=400)
        rows = await record.read(days)
        return JSONResponse(summary_json(rows, last_days(days, time.time())))

    return stats
