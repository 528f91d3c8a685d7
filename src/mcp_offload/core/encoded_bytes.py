"""Bytes carried as base64 text (MCP image/audio/blob blocks, SDK image parts, `data:` URLs), decoded one way.

Strict: anything that is not valid base64 gives None, and the caller keeps it as the text it is.
"""

from __future__ import annotations

import base64
import binascii


def decode_base64(data: str) -> bytes | None:
    """The bytes of strict base64 text, or None."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_data_url(url: str) -> tuple[bytes, str] | None:
    """(bytes, mime type) of a base64 `data:` URL; None for anything else (a remote URL stays as it is)."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, _, payload = url.partition(";base64,")
    data = decode_base64(payload)
    return None if data is None else (data, head[5:] or "application/octet-stream")
