"""A turn's second step: the upstream call (`Turn.send`, prepared by the provider).

A 4xx to a rewritten request (other than auth, rate limit and timeout: refusals about who or how often, not about
the request's content) is retried once with the client's original bytes; if that one passes, the session is marked
to bypass rewriting from now on (in the record, so every instance sees it), and the turn does not loop.
"""

from __future__ import annotations

import logging

import httpx2

from mcp_offload.cachesafe.record import open_record
from mcp_offload.errors import StoreError
from mcp_offload.gateway.turn import Turn

log = logging.getLogger("mcp_offload.gateway")

NO_RETRY = frozenset({401, 403, 408, 429})


async def send_turn(turn: Turn) -> httpx2.Response:
    """The upstream's response (its body not read yet); its status is the exchange's."""
    response = await turn.send(turn.plan.content)
    if turn.plan.rewrite is not None and turn.plan.changed and 400 <= response.status_code < 500:
        response = await _retry_original(turn, response)
    turn.exchange.status = response.status_code
    return response


async def _retry_original(turn: Turn, refused: httpx2.Response) -> httpx2.Response:
    if refused.status_code in NO_RETRY or turn.plan.rewrite is None:
        return refused
    detail = (await refused.aread()).decode("utf-8", "replace")[:300]
    await refused.aclose()
    original = await turn.send(turn.asked.raw)
    if original.status_code < 400:
        session = turn.plan.rewrite.session
        turn.exchange.bypassed = True
        reason = f"upstream refused a rewritten request ({refused.status_code}): {detail}"
        log.warning("session %s bypassed: %s", session.key[:12], reason)
        try:
            await open_record(turn.context.services).mark_bypass(session, reason)
        except StoreError as exc:
            log.warning("could not record the bypass: %s", exc)
    return original
