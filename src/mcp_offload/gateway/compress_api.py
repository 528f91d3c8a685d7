"""The context-compression service contract (Headroom's: what LiteLLM's `headroom` guardrail, Portkey and Kong call),
served by mcp-offload over the gateway's cache-safe core.

    POST /v1/compress              {"messages": [...], "model"?, "format"?} -> the same number of messages, tool
                                   results over the threshold replaced by mcp-offload's reference + preview and a
                                   marker `[... Retrieve more: hash=<24 hex>]`; `ccr_hashes` lists the hashes,
                                   `format` the message format used (named, or detected: `apis.detect`)
    GET  /v1/retrieve/{hash}       ?query=  -> {"hash", "original_content", ...}
    POST /v1/retrieve/{hash}       {"query"?}
    POST /v1/retrieve              {"hash", "query"?}
    GET  /health                   alive (no token needed)
    GET  /readyz                   ready: the store answers a round trip (503 otherwise)

A compatible superset: `query` absent or empty gives the whole original (as Headroom); a query searches the output
with the project's own search (any of its words, case-insensitive, with a line of context; `re:PATTERN` for an RE2
pattern) and `jq:PROGRAM` runs a jq program over a JSON output; the answer text is in `original_content` either way
(that is what the LiteLLM guardrail hands the model), `mode` says which it was.

Which results are compressed: LiteLLM's guardrail sends no assistant rows, so every tool result it sends is new to
the rule and one of `threshold_tokens` (the gateway's `--threshold-tokens`) or more is stored. A caller that sends
assistant rows gets the gateway's rule exactly: results before the last model output are the already-sent prefix,
rewritten only when the cost rule or window pressure says so.

The rewrite is the gateway's (`rewrite_messages`): decisions are sticky per content (call id + SHA-256), recorded
set-if-absent in the store, and handles are derived from the session key and the content, so the same result gets
the same stub bytes on every call, every instance and after restarts. The hash is a keyed hash of the handle under
the tenant; a per-tenant index in the store maps it back (so any instance answers it).

Tenants: the caller's credential (`Authorization`, `x-api-key`, ...; hashed, never kept). A hash of another tenant
is answered exactly like an unknown one (404). Sessions: the affinity header (`x-headroom-session-id`,
`x-session-affinity`, `x-session-id` or `x-mcp-offload-session`) keeps a conversation's outputs apart within its
tenant; without one the tenant is one session (harmless: decisions are keyed by content). The bypass header
(`x-headroom-bypass: true`, or `x-mcp-offload-bypass: true`) returns the messages unchanged.

Errors are JSON `{"error": {"code", "message"}}`: 400 for a malformed message list (`invalid_messages`), an unknown
`format` (`unknown_format`), messages that are not the `format` named (`format_mismatch`) or, without `format`,
match no single format (`unrecognized_messages`: a message of no known format, or of two formats mixed), 401 for a
missing gateway token, 404 for an unknown / other tenant's / expired hash (the message says which of the caller's own
it is: expired), 503 when the store is down. The caller's contract defines fail-open: LiteLLM's guardrail with
`unreachable_fallback: fail_open` forwards the request uncompressed on any non-200; by default it fails closed.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import orjson
from starlette.types import Receive, Scope, Send

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.detect import ShapeError, apis_reading, shape_of
from mcp_offload.apis.registry import APIS, UnknownApi, api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.retrieval import gone_handle, run_retrieval
from mcp_offload.cachesafe.rewrite import REFERENCE_PREFIX, rewrite_messages
from mcp_offload.cachesafe.session import CacheSafeSession, credential_digest
from mcp_offload.core.outputs import SessionScope
from mcp_offload.core.services import Services
from mcp_offload.errors import StoreError
from mcp_offload.gateway.asgi import JSON_HEADERS, query_string, send_bytes
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.gateway.request_body import ClientGone, json_object, read_body
from mcp_offload.store.handles import scope_key

__all__ = ["COMPRESS_PATHS", "Caller", "CompressApi", "CompressEndpoint", "caller_for", "is_compress_path", "marker"]

log = logging.getLogger("mcp_offload.gateway.compress")

COMPRESS_PATHS = ("/v1/compress", "/v1/retrieve", "/health", "/readyz")
AFFINITY_HEADERS = ("x-headroom-session-id", "x-session-affinity", "x-session-id", "x-mcp-offload-session")
BYPASS_HEADERS = ("x-headroom-bypass", "x-mcp-offload-bypass")
HASH_CHARS = 24
HASH_RE = re.compile(r"[a-f0-9]{12,24}")
_HANDLE_RE = re.compile(re.escape(REFERENCE_PREFIX[: -len("out_")]) + r"(out_[a-z2-7]{26})")
TRANSFORM = "mcp-offload:reference"
MAX_QUERY_CHARS = 4_000


def is_compress_path(path: str) -> bool:
    return path in COMPRESS_PATHS or path.startswith("/v1/retrieve/")


def marker(hash_value: str) -> str:
    """The line appended to a stub: Headroom's marker shape, so agents and parsers that know it find the hash."""
    return (
        '\n[Search it with headroom_retrieve query="words", or query="jq:<program>" for JSON. '
        f"Retrieve more: hash={hash_value}]"
    )


@dataclass(frozen=True, slots=True)
class Caller:
    tenant: str  # SHA-256 of the credential headers (never the credential)
    session: CacheSafeSession
    index_key: str  # the record "session" holding the tenant's hash -> (session, handle) index


class CompressApi:
    """The routes above, for one `Services` and the gateway's policy. The gateway's checks ran before (its token,
    which a caller may present as `Authorization: Bearer` here, as the guardrails do; Host/Origin: access.py)."""

    def __init__(self, services: Services, policy: RewritePolicy) -> None:
        self.services = services
        self.policy = replace(policy, retrieval="visible")  # the caller injects its own retrieval tool

    async def respond(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) for one request; never raises."""
        try:
            if path == "/health" and method == "GET":
                return 200, {"status": "ok", "service": "mcp-offload compress"}
            if path == "/readyz" and method == "GET":
                return await self._ready()
            if path == "/v1/compress" and method == "POST":
                return await self._compress(headers, json_object(body))
            if path.startswith("/v1/retrieve"):
                return await self._retrieve(method, path, query, headers, body)
            raise GatewayError(405, "method_not_allowed", f"{method} {path} is not a route of this service.")
        except GatewayError as exc:
            return exc.status, {"error": {"code": exc.code, "message": exc.message}}
        except StoreError as exc:
            log.warning("compress api: the store failed: %s: %s", type(exc).__name__, exc)
            return 503, _store_down(exc)
        except Exception:  # the contract's callers read JSON: never a traceback on the wire
            log.exception("compress api: %s %s failed", method, path)
            failed = "The request failed in mcp-offload; nothing was changed (see its log)."
            return 500, {"error": {"code": "internal_error", "message": failed}}

    # -- routes ----------------------------------------------------------------------------------------------------
    async def _ready(self) -> tuple[int, dict[str, Any]]:
        try:
            await open_record(self.services).backend.get(scope_key("readyz"), ["probe"])
        except StoreError as exc:
            return 503, {"status": "unavailable", **_store_down(exc)}
        return 200, {"status": "ready"}

    async def _compress(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = _messages_of(body.get("messages"))
        api = _format_of(body.get("format"), messages)
        tokens = self.services.tokens
        before = sum(tokens.count(_text_of(m)) for m in messages)
        if any(str(headers.get(h, "")).lower() == "true" for h in BYPASS_HEADERS):
            return 200, _compressed(api, messages, before, before, [], bypass=True)
        caller = caller_for(headers)
        model = body.get("model") if isinstance(body.get("model"), str) else None
        try:
            done = await rewrite_messages(self.services, api, caller.session, messages, self.policy, model=model)
        except ValueError as exc:
            raise GatewayError(400, "invalid_messages", f"The message list is malformed: {exc}") from None
        if not done.changed:
            return 200, _compressed(api, messages, before, before, [])
        out: list[dict[str, Any]] = []
        hashes: list[str] = []
        index: dict[str, str] = {}
        for original, rewritten in zip(messages, done.messages, strict=True):
            if rewritten is original:
                out.append(rewritten)
                continue
            seen = set(_strings(original))
            marked = _mark(rewritten, seen, lambda handle: self._hash(caller, handle, index, hashes))
            out.append(marked)
        if index:
            await open_record(self.services).backend.put_if_absent(caller.index_key, index)
        after = sum(tokens.count(_text_of(m)) for m in out)
        return 200, _compressed(api, out, before, after, hashes)

    def _hash(self, caller: Caller, handle: str, index: dict[str, str], hashes: list[str]) -> str:
        value = hmac.new(caller.tenant.encode(), handle.encode(), hashlib.sha256).hexdigest()[:HASH_CHARS]
        index[f"c:{value}"] = orjson.dumps({"session": caller.session.key, "handle": handle}).decode()
        if value not in hashes:
            hashes.append(value)
        return value

    async def _retrieve(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        if method == "GET":
            params = urllib.parse.parse_qs(query)
            hash_value = path.removeprefix("/v1/retrieve/") if path.startswith("/v1/retrieve/") else ""
            wanted = params.get("query", [""])[0]
        elif method == "POST":
            data = json_object(body) if body.strip() else {}
            hash_value = path.removeprefix("/v1/retrieve/") if path != "/v1/retrieve" else data.get("hash", "")
            wanted = data.get("query") or ""
        else:
            raise GatewayError(405, "method_not_allowed", f"{method} {path} is not a route of this service.")
        if not isinstance(hash_value, str) or not isinstance(wanted, str):
            raise GatewayError(400, "invalid_request", '"hash" and "query" must be strings.')
        hash_value = hash_value.lower()
        if not HASH_RE.fullmatch(hash_value):
            raise GatewayError(400, "invalid_hash", "A hash is 12 to 24 hex characters, as in the compression marker.")
        if len(wanted) > MAX_QUERY_CHARS:
            raise GatewayError(400, "invalid_query", f"The query is longer than {MAX_QUERY_CHARS:,} characters.")
        caller = caller_for(headers)
        raw = (await open_record(self.services).backend.get(caller.index_key, [f"c:{hash_value}"])).get(
            f"c:{hash_value}"
        )
        entry = orjson.loads(raw) if raw else None
        if not isinstance(entry, dict):
            raise _not_found(hash_value)
        session = CacheSafeSession.of_key(str(entry["session"]))
        handle = str(entry["handle"])
        gone = await gone_handle(self.services, session, handle)
        if gone is not None:
            what = f" (the result of tool call {gone.producer.call_id})" if gone.producer is not None else ""
            raise GatewayError(
                404,
                "expired",
                f"hash={hash_value}{what} is expired: its content is no longer stored. "
                "Run the tool again if you still need its output.",
            )
        if not wanted.strip():
            text = await self._original(session.scope, handle)
            return 200, {"hash": hash_value, "mode": "original", "original_content": text, "is_error": False}
        if wanted.startswith("jq:"):
            mode, answer = (
                "jq",
                await run_retrieval(
                    self.services, session, "query_large_output", {"handle": handle, "query": wanted[3:].strip()}
                ),
            )
        else:
            pattern = wanted[3:] if wanted.startswith("re:") else _any_word(wanted)
            mode, answer = (
                "search",
                await run_retrieval(
                    self.services,
                    session,
                    "search_large_output",
                    {"handle": handle, "pattern": pattern, "context_lines": 1},
                ),
            )
        return 200, {
            "hash": hash_value,
            "query": wanted,
            "mode": mode,
            "original_content": answer.text,
            "is_error": answer.is_error,
        }

    async def _original(self, scope: SessionScope, handle: str) -> str:
        async with self.services.store.open(scope.key, handle) as output:
            data = await anyio.to_thread.run_sync(lambda: bytes(output.contiguous()))
        return data.decode("utf-8", "replace")


# -- request pieces --------------------------------------------------------------------------------------------
def caller_for(headers: Mapping[str, str]) -> Caller:
    tenant = credential_digest(headers)
    affinity = next((headers[h].strip() for h in AFFINITY_HEADERS if headers.get(h, "").strip()), "")
    key = scope_key(f"compress:{tenant}:{affinity[:200]}")
    return Caller(tenant=tenant, session=CacheSafeSession.of_key(key), index_key=scope_key(f"compress-index:{tenant}"))


def _format_of(value: object, messages: list[dict[str, Any]]) -> LlmApi:
    """The named format, or the one the messages are written in (`apis.detect.shape_of`): a list that matches no single
    format, or one that cannot be the format named, is refused rather than passed through untouched (a result the
    rewrite cannot read would silently stay as it is)."""
    if value is None:
        try:
            return shape_of(messages)
        except ShapeError as exc:
            raise GatewayError(400, "unrecognized_messages", str(exc)) from None
    try:
        named = api_named(value if isinstance(value, str) else repr(value))
    except UnknownApi as exc:
        raise GatewayError(400, "unknown_format", str(exc)) from None
    for i, m in enumerate(messages):
        fits = apis_reading(m)
        if fits and named.name not in fits:
            raise GatewayError(
                400,
                "format_mismatch",
                f'"format" is {value!r} but messages[{i}] is not a {named.title} message '
                f"(it reads as {' or '.join(APIS[f].title for f in sorted(fits))}); "
                'send the right "format", or none to have it detected.',
            )
    return named


def _messages_of(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise GatewayError(400, "invalid_messages", '"messages" must be a non-empty list of message objects.')
    for i, m in enumerate(value):
        if not isinstance(m, dict):
            raise GatewayError(400, "invalid_messages", f"messages[{i}] is a {type(m).__name__}, not an object.")
        if not isinstance(m.get("role"), str) and m.get("type") is None:
            raise GatewayError(400, "invalid_messages", f'messages[{i}] has no "role".')
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _mark(value: Any, seen: set[str], hash_of: Callable[[str], str]) -> Any:
    """`value` with the marker appended to every reference the rewrite put in (strings not in the original)."""
    if isinstance(value, str):
        found = _HANDLE_RE.match(value)
        if found is None or value in seen:
            return value
        return value + marker(hash_of(found.group(1)))
    if isinstance(value, dict):
        return {k: _mark(v, seen, hash_of) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark(v, seen, hash_of) for v in value]
    return value


def _text_of(message: Mapping[str, Any]) -> str:
    """The text a message puts in the prompt: its content, a Responses tool output item's `output`, or a Gemini
    content's `parts`."""
    return "".join(s for key in ("content", "output", "parts") for s in _strings(message.get(key)))


def _any_word(query: str) -> str:
    words = [w for w in re.split(r"\s+", query.strip()) if w][:32]
    return "|".join(re.escape(w) for w in words)


def _compressed(
    api: LlmApi, messages: list[dict[str, Any]], before: int, after: int, hashes: list[str], *, bypass: bool = False
) -> dict[str, Any]:
    return {
        "messages": messages,
        "format": api.name,
        "tokens_before": before,
        "tokens_after": after,
        "tokens_saved": max(before - after, 0),
        "compression_ratio": round(after / before, 4) if before else 1.0,
        "transforms_applied": [TRANSFORM] if hashes else [],
        "ccr_hashes": hashes,
        "bypassed": bypass,
    }


def _not_found(hash_value: str) -> GatewayError:
    return GatewayError(
        404,
        "not_found",
        f"No content for hash={hash_value}: it is unknown (a hash belongs to the caller it was given to).",
    )


def _store_down(exc: BaseException) -> dict[str, Any]:
    return {
        "error": {
            "code": "store_unavailable",
            "message": "mcp-offload's store is unavailable; nothing was stored or changed. "
            f"Retry later ({type(exc).__name__}).",
        }
    }


class CompressEndpoint:
    """The routes above as one ASGI endpoint of the gateway's app (its checks ran in the middleware before)."""

    def __init__(self, api: CompressApi, max_body_bytes: int) -> None:
        self.api = api
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await read_body(receive, self.max_body_bytes)
        except GatewayError as exc:
            status, answer = exc.status, {"error": {"code": exc.code, "message": exc.message}}
        except ClientGone:
            return
        else:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            status, answer = await self.api.respond(scope["method"], scope["path"], query_string(scope), headers, body)
        await send_bytes(send, status, JSON_HEADERS, orjson.dumps(answer))
