"""Signatures for the reasoning the upstream emits, checked when a client sends it back.

Anthropic returns a `signature` with every `thinking` block (and opaque `data` in `redacted_thinking`), and refuses
a request whose thinking blocks were altered. OpenAI returns `encrypted_content` on reasoning items. The simulator
signs what it emits with an HMAC over the exact text, so any change to a block (text, signature, or a block made
up by a gateway) is caught the way the real API would catch it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


class Signer:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def sign(self, text: str) -> str:
        mac = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        return base64.b64encode(b"sig1" + mac).decode("ascii")

    def verify(self, text: str, signature: object) -> bool:
        return isinstance(signature, str) and hmac.compare_digest(self.sign(text), signature)

    def seal(self, text: str) -> str:
        """Opaque data carrying `text` (redacted thinking, encrypted reasoning): text + MAC, base64."""
        raw = text.encode("utf-8", "surrogatepass")
        mac = hmac.new(self._key, raw, hashlib.sha256).digest()
        return base64.b64encode(b"seal" + mac + raw).decode("ascii")

    def unseal(self, data: object) -> str | None:
        """The text sealed in `data`, or None when it was not produced by this signer or was altered."""
        if not isinstance(data, str):
            return None
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            return None
        if not raw.startswith(b"seal") or len(raw) < 36:
            return None
        mac, body = raw[4:36], raw[36:]
        if not hmac.compare_digest(mac, hmac.new(self._key, body, hashlib.sha256).digest()):
            return None
        return body.decode("utf-8", "surrogatepass")
