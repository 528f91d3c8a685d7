"""How the `outputs` commands show stored outputs to a person: the table of `list`, the JSON of `list --json`,
and `show`'s metadata block followed by the reference (preview included) exactly as the model saw it.

The preview is rebuilt from the stored content by ingest's own rule (`core.ingest.stored_preview`: deterministic,
same budget and token counter), so it matches what the server sent as long as the settings do.

The core (previews, the tools' result models) is imported by the functions that use it: `list` needs none of it,
and it is most of a short command's start (~0.3 s of CPU).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcp_offload.settings import Settings
from mcp_offload.store.base import OutputMeta, ScannedOutput
from mcp_offload.tokens import TokenCounter

if TYPE_CHECKING:
    from mcp_offload.core.ingest import Ingested

SESSION_CHARS = 12
_COLUMNS = ("HANDLE", "SESSION", "NAME", "KIND", "SIZE", "TOKENS", "CREATED", "LAST READ", "EXPIRES")


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # not reached


def human_span(seconds: float) -> str:
    """A rounded, signed-free span: 45s, 12m, 3h, 2d."""
    seconds = abs(seconds)
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= length:
            return f"{int(seconds // length)}{unit}"
    return f"{int(seconds)}s"


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _tokens(meta: OutputMeta) -> str:
    return f"{'~' if meta.tokens_estimated else ''}{meta.tokens:,}"


NAME_CHARS = 40
_NAME_HEAD = 16


def short_name(name: str, width: int = NAME_CHARS) -> str:
    """`name` in at most `width` characters: its start and its end around an ellipsis, so names that share a long
    prefix (proxied results: `server__tool {"path": …}`) keep the part that tells them apart."""
    if len(name) <= width:
        return name
    return name[:_NAME_HEAD] + "…" + name[-(width - _NAME_HEAD - 1) :]


def table_row(out: ScannedOutput, now: float) -> tuple[str, ...]:
    meta = out.meta
    expires = f"in {human_span(out.expires - now)}" if out.expires > now else "expired"
    return (
        meta.handle,
        out.scope[:SESSION_CHARS],
        short_name(meta.name or "-"),
        meta.kind,
        human_bytes(meta.size),
        _tokens(meta),
        _when(meta.created),
        "never" if out.last_used is None else f"{human_span(now - out.last_used)} ago",
        expires,
    )


def render_table(outputs: list[ScannedOutput], now: float) -> str:
    if not outputs:
        return "no outputs\n"
    rows = [_COLUMNS, *(table_row(o, now) for o in outputs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    total = sum(o.used_bytes for o in outputs)
    indexes = sum(o.sidecar_bytes for o in outputs)
    kept = f" (of which {human_bytes(indexes)} search indexes kept with them)" if indexes else ""
    lines.append(f"{len(outputs)} output(s), {human_bytes(total)}{kept}")
    return "\n".join(lines) + "\n"


def as_json(out: ScannedOutput) -> dict[str, Any]:
    """The fields the tools report for an output (`facts_of`), plus where and how long it lives."""
    from mcp_offload.core.results import facts_of

    return {
        **facts_of(out.meta),
        "session": out.scope,
        "source": out.meta.source,
        "created": out.meta.created,
        "last_read": out.last_used,
        "expires": out.expires,
        "sidecar_bytes": out.sidecar_bytes,
    }


def rebuild_ingested(meta: OutputMeta, content: bytes, settings: Settings, tokens: TokenCounter) -> Ingested:
    """The output with the preview the server built for it (ingest's own rule, `stored_preview`)."""
    from mcp_offload.core.ingest import Ingested, stored_preview

    return Ingested(meta=meta, preview=stored_preview(meta, content, settings, tokens.count))


def render_show(out: ScannedOutput, ingested: Ingested, now: float) -> str:
    from mcp_offload.core.render import render_reference

    meta = out.meta
    facts = [
        ("handle", meta.handle),
        ("session", out.scope),
        ("name", meta.name or "-"),
        ("source", meta.source or "-"),
        ("kind", meta.kind + (f" ({meta.mime_type})" if meta.mime_type else "")),
        ("size", f"{meta.size:,} bytes, {meta.chars:,} chars, {meta.lines:,} lines"),
        ("tokens", _tokens(meta)),
        ("created", _when(meta.created)),
        ("last read", "never" if out.last_used is None else _when(out.last_used)),
        ("expires", _when(out.expires) + ("" if out.expires > now else " (expired)")),
    ]
    width = max(len(k) for k, _ in facts)
    head = "\n".join(f"{k.ljust(width)}  {v}" for k, v in facts)
    reference = render_reference(ingested.output())
    return f"{head}\n\n--- what the model saw ---\n{reference}\n"
