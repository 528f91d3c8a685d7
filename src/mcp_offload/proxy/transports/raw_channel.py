"""Requests to an upstream as JSON lines, beside the SDK client's own traffic on the same connection.

The SDK `Client` keeps the connection's control traffic (the handshake or discovery, listings, pings, change
subscriptions, requests the server makes of us). A `tools/call`, the proxy's hot path, goes through this channel
instead: one `orjson` encode on the way out, and the answer comes back as the parsed dict the connection's reader
already made, without the SDK's task, memory-stream hops and per-message models on both ends (about a third of a
small proxied call's CPU). What a call needs on the way stays: a timeout (then a courtesy `notifications/cancelled`,
as the SDK sends), cancellation by the caller (the same), progress (the request's `progressToken` is its own id, so
the upstream's progress notifications come back here), and the end of the connection (every waiting call fails at
once with `ChannelClosed`).

Ids are strings (`mo-1`, `mo-2`, …): the SDK numbers its own requests, so the two never meet. On a 2026-07-28
connection every request carries the per-request envelope; the channel sends the one the SDK client itself put on
its last request (`note_sent`), so both speak as the same client.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import orjson
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

log = logging.getLogger(__name__)

ENVELOPE_KEYS = (PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY)
ID_PREFIX = "mo-"  # our request ids are strings; the SDK numbers its own
COURTESY_CANCEL_S = 2.0  # bound on writing a courtesy cancel (a wedged pipe must not hang the caller)

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
WriteLine = Callable[[bytes], Awaitable[None]]


class ChannelClosed(Exception):
    """The connection ended (the upstream exited or closed its output) before the answer came."""


class _Inbox:
    """One request's messages as they come (progress, then the answer), until the connection ends: a deque and a
    future on the event loop, not an anyio memory stream (whose per-request setup and receive machinery were a
    tenth of a small proxied call's CPU). asyncio only, as the stdio pipes it serves."""

    __slots__ = ("_closed", "_messages", "_waiter")

    def __init__(self) -> None:
        self._messages: deque[dict[str, Any]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def put(self, message: dict[str, Any]) -> None:
        if not self._closed:
            self._messages.append(message)
            self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> dict[str, Any] | None:
        """The next message, or None once the connection ended with none left."""
        while not self._messages:
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._messages.popleft()


class RawChannel:
    """Requests by id over one connection. The connection's reader hands every message it parsed to `take`
    first; `write` puts one whole line on the connection."""

    def __init__(self, write: WriteLine) -> None:
        self._write = write
        self._ids = itertools.count(1)
        self._pending: dict[str, _Inbox] = {}
        self._closed = False
        self.envelope: dict[str, Any] | None = None  # the SDK client's last 2026-07-28 envelope, if any

    # -- the reader's side ---------------------------------------------------------------------------------------
    def take(self, message: Any) -> bool:
        """Whether `message` (a parsed JSON-RPC message) is this channel's: an answer to one of its requests, or
        progress on one. Called by the reader for every message, before the SDK client sees it. An answer or
        progress for one of our ids that nobody waits for any more (a call that timed out or was cancelled, or an
        id the upstream made up) is taken and dropped, as the SDK drops a late answer: the SDK never sees our ids."""
        if type(message) is not dict:
            return False
        if "method" not in message:
            key = message.get("id")
        elif message.get("method") == "notifications/progress":
            params = message.get("params")
            key = params.get("progressToken") if type(params) is dict else None
        else:
            return False
        if type(key) is not str or not key.startswith(ID_PREFIX):
            return False
        inbox = self._pending.get(key)
        if inbox is None:  # a caller that stopped waiting (timed out, cancelled): dropped, as the SDK does
            log.debug("dropping a message for %r, which no call waits for", key[:80])
            return True
        inbox.put(message)
        return True

    def note_sent(self, message: Any) -> None:
        """The SDK client sent `message` (a JSON-RPC request as a dict): keep its 2026-07-28 envelope."""
        params = message.get("params") if isinstance(message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
            self.envelope = {key: meta[key] for key in ENVELOPE_KEYS if key in meta}

    def close(self) -> None:
        """The connection ended: every waiting request fails with `ChannelClosed`, and so does every later one."""
        self._closed = True
        pending, self._pending = self._pending, {}
        for inbox in pending.values():
            inbox.close()

    # -- the caller's side ---------------------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout_s: float,
        modern: bool,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """Send one request; return the answer message (`result` or `error`). Raises `TimeoutError` after
        `timeout_s` (the upstream was told to cancel), `ChannelClosed` when the connection ends first."""
        if self._closed:
            raise ChannelClosed
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        meta: dict[str, Any] = {}
        if modern and self.envelope is not None:
            meta.update(self.envelope)
        if progress is not None:
            meta["progressToken"] = request_id
        if meta:
            params = {**params, "_meta": meta}
        line = encode_line({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        inbox = self._pending[request_id] = _Inbox()
        try:
            # asyncio's timeout, not anyio.fail_after: a tenth of a small call's CPU was the anyio scope's setup
            async with asyncio.timeout(timeout_s):
                try:
                    await self._write(line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    raise ChannelClosed from exc  # the upstream's stdin is gone: it exited or is exiting
                while (message := await inbox.get()) is not None:
                    if "method" not in message:
                        return message
                    if progress is not None:
                        await _report(progress, message)
            raise ChannelClosed
        except TimeoutError:
            await self._cancel(request_id, "timed out")
            raise
        except anyio.get_cancelled_exc_class():
            # sent or not (a cancel may land while the line is being written), the upstream is told; a cancel for
            # an id it never saw is ignored, as the protocol says
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, "the caller cancelled")
            raise
        finally:
            self._pending.pop(request_id, None)
            inbox.close()

    async def _cancel(self, request_id: str, reason: str) -> None:
        """The courtesy `notifications/cancelled` (best effort, bounded)."""
        if self._closed:
            return
        params = {"requestId": request_id, "reason": reason}
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        with anyio.move_on_after(COURTESY_CANCEL_S):
            try:
                await self._write(encode_line(note))
            except Exception as exc:  # the connection is going away: nothing left to cancel
                log.debug("courtesy cancel of %s not sent: %s", request_id, exc)


def encode_line(message: dict[str, Any]) -> bytes:
    """One message as a JSON line: orjson, or the standard library for what orjson refuses (integers over 64 bits,
    which a client's arguments may hold)."""
    try:
        return orjson.dumps(message) + b"\n"
    except orjson.JSONEncodeError:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def _report(progress: ProgressFn, message: dict[str, Any]) -> None:
    """One `notifications/progress` to the caller's callback; a bad one is dropped, a failing callback logged."""
    params = message.get("params") or {}
    value, total, text = params.get("progress"), params.get("total"), params.get("message")
    if not isinstance(value, int | float) or isinstance(value, bool):
        return
    try:
        await progress(
            float(value),
            float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
            text if isinstance(text, str) else None,
        )
    except Exception:
        log.warning("relaying progress failed", exc_info=True)
