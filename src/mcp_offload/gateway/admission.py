"""Admission of big turns: a bound on the API calls with a big body (`PARSE_MIN_BYTES` or more: their parsing,
rewriting and ingest take the ingest workers' time) in progress at once, so that more of them than the machine can
ingest queue up to a bound and are then shed, instead of piling up without end (memory: each holds its body, up to
`--max-body-bytes`, several times over).

A big turn holds its place from its arrival (its Content-Length says it is big: it is shed before its body is read)
or from the end of its body (no Content-Length), to its end. Up to `gateway_max_big_turns` are in progress: as many
as there are ingest workers run, the others wait for a worker (the queue). One more is shed at once with the API's
own "overloaded" answer (`Provider.overloaded_status`: Anthropic 529 overloaded_error, OpenAI 503, Gemini 503
UNAVAILABLE, Bedrock 503 ServiceUnavailableException) and a `Retry-After` of about the time the turns ahead of it
take, which the SDKs honour when they retry. Nothing of a shed turn was read or rewritten: the client retries it
whole. Small turns are never held back.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from mcp_offload.core.ingest_pool import PARSE_MIN_BYTES
from mcp_offload.gateway.errors import GatewayError

__all__ = ["PARSE_MIN_BYTES", "BigTurns", "Overloaded"]

RETRY_AFTER_MAX_S = 60
FIRST_ESTIMATE_S = 1.0  # a big turn's time before any has been measured


class Overloaded(GatewayError):
    """A big turn shed: the gateway has `limit` in progress. Answered in the provider's overloaded status."""

    def __init__(self, status: int, limit: int, retry_after_s: int) -> None:
        super().__init__(
            status,
            "overloaded",
            f"The gateway is overloaded: {limit} requests with large bodies are in progress, its limit "
            f"(gateway_max_big_turns). Retry in {retry_after_s} s.",
        )
        self.retry_after_s = retry_after_s


@dataclass(slots=True)
class BigTurns:
    """The big turns in progress on this gateway (one event loop: no lock)."""

    limit: int
    workers: int  # the ingest workers that run them
    in_progress: int = 0
    shed: int = 0  # since start (on /healthz)
    average_s: float = FIRST_ESTIMATE_S  # a big turn's time, a moving average

    def enter(self) -> bool:
        """Take a place (False: none is free; counted as shed)."""
        if self.in_progress >= self.limit:
            self.shed += 1
            return False
        self.in_progress += 1
        return True

    def leave(self, started: float) -> None:
        """Give the place back; `started`: when it was taken (`time.monotonic()`)."""
        self.in_progress -= 1
        self.average_s += (time.monotonic() - started - self.average_s) / 8

    def overloaded(self, status: int) -> Overloaded:
        """The answer to a turn shed now: the turns ahead of it take about their average each, `workers` at a time."""
        wait = self.average_s * max(1, self.in_progress) / max(1, self.workers)
        return Overloaded(status, self.limit, max(1, min(RETRY_AFTER_MAX_S, math.ceil(wait))))
