"""Handle grammar: generation and validation. The only module that knows what a handle looks like.

A handle is `out_` followed by 26 characters of lowercase RFC 4648 base32 (130 bits): short, opaque,
unguessable, and never a path. The bits are random (`new_handle`), or, for a front end that must mint the same handle
for the same content on every instance (the LLM gateway), a keyed hash (`derived_handle`: HMAC-SHA256 keyed by the
session's scope key, so it is as unguessable as the scope key without knowing it). Anything else is rejected before
it reaches a store backend, so a hostile string (`../x`, `%2e%2e%2f`, `C:\\`, NUL, look-alike unicode, 10 kB of
junk) never touches the filesystem or Redis.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from mcp_offload.errors import InvalidHandle

PREFIX = "out_"
_BODY_CHARS = 26
MAX_HANDLE_LEN = len(PREFIX) + _BODY_CHARS
_GRAMMAR = re.compile(r"out_[a-z2-7]{26}", re.ASCII)
_SCOPE = re.compile(r"[0-9a-f]{32}", re.ASCII)
_MENTION = re.compile(r"(?<![A-Za-z0-9_])out_[a-z2-7]{26}(?![A-Za-z0-9_])", re.ASCII)


def new_handle() -> str:
    """A fresh handle with 130 bits from the OS CSPRNG."""
    body = base64.b32encode(secrets.token_bytes(17)).decode("ascii").lower()[:_BODY_CHARS]
    return PREFIX + body


def derived_handle(key: str, *parts: str) -> str:
    """A deterministic handle: HMAC-SHA256 over `parts` (joined unambiguously) keyed by `key` (a scope key).

    The same key and parts give the same handle on every process and machine, so two instances racing to store
    the same content mint the same handle (the store then keeps one copy: `HandleExists` for the loser)."""
    message = "\x00".join(f"{len(p)}:{p}" for p in parts).encode("utf-8", "surrogatepass")
    digest = hmac.new(("handle:" + key).encode("utf-8"), message, hashlib.sha256).digest()
    return PREFIX + base64.b32encode(digest[:17]).decode("ascii").lower()[:_BODY_CHARS]


def validate_handle(value: object) -> str:
    """Return `value` if it is a well-formed handle, else raise `InvalidHandle` (one message for every case)."""
    if isinstance(value, str) and len(value) == MAX_HANDLE_LEN and _GRAMMAR.fullmatch(value):
        return value
    shown = repr(value)[:60] if isinstance(value, str) else type(value).__name__
    raise InvalidHandle(
        f"{shown} is not a valid handle. Handles look like 'out_' + 26 letters/digits "
        "(e.g. out_abcdefghijklmnopqrstuvwx23); call list_outputs to see this session's handles."
    )


def handles_in(text: str, limit: int = 64) -> list[str]:
    """The well-formed handles mentioned in `text` (as whole words), each once, in order of first mention; at most
    `limit` of them."""
    found: dict[str, None] = {}
    for match in _MENTION.finditer(text):
        found[match.group(0)] = None
        if len(found) >= limit:
            break
    return list(found)


def scope_key(identity: str) -> str:
    """Map any session identity (random id, principal name, ...) to a fixed-length hex key for storage."""
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def validate_scope(value: str) -> str:
    """Scope keys are produced by `scope_key` only; a backend double-checks before building a path."""
    if isinstance(value, str) and _SCOPE.fullmatch(value):
        return value
    raise ValueError("invalid scope key")  # programming error, never user input
