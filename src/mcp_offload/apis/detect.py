"""Which API a message list is in, when the caller does not name it (a named one: `registry.api_named`). One
detection, for the `Compactor` and the compression service.

Each registered API says whether a message can be its own (`MessageFormat.could_be`, in its package); the
list's API is the one every message can belong to. A list that
every API reads alike (role and string content only) holds no tool result in any of them, so the choice cannot
change the answer: Chat Completions (`PLAIN`), the contract's default. A list no API reads whole (messages of two
APIs, or a message of none) is refused by `shape_of` with `ShapeError`, naming the messages that disagree; the
`Compactor` (`detect_api`) takes the first message only one API reads instead, as it always has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.message import part_types
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import APIS

__all__ = ["PLAIN", "ShapeError", "apis_reading", "detect_api", "shape_of"]

PLAIN: ApiName = "openai_chat"  # the pick for a list every API reads alike


class ShapeError(ValueError):
    """The messages match no single API; the message says which ones and why, in one line."""


def _offered() -> tuple[LlmApi, ...]:
    """The APIs detection chooses among, in the order a tie is settled: `PLAIN` first, then the registry's."""
    return tuple(sorted(APIS.values(), key=lambda api: api.name != PLAIN))


def apis_reading(message: Mapping[str, Any]) -> frozenset[ApiName]:
    """The APIs `message` can belong to (empty: none)."""
    return frozenset(api.name for api in _offered() if api.messages.could_be(message))


def _plain(message: object) -> Mapping[str, Any]:
    """`message` as plain data (an SDK object dumped); {} (read as no API's) for anything else."""
    if isinstance(message, Mapping):
        return message
    model_dump = getattr(message, "model_dump", None)
    dumped = model_dump(mode="json", exclude_none=True) if callable(model_dump) else None
    return dumped if isinstance(dumped, dict) else {}


def _describe(index: int, message: Mapping[str, Any]) -> str:
    role, kind = message.get("role"), message.get("type")
    parts = part_types(message.get("content")) or []
    what = f"type {kind!r}" if kind is not None else f"role {role!r}"
    if parts:
        what += " with " + ", ".join(sorted(set(parts))[:3]) + " parts"
    return f"messages[{index}] ({what})"


def titles(names: frozenset[ApiName]) -> str:
    """`names` as people read them, in detection order ("OpenAI Chat Completions or Anthropic Messages")."""
    return " or ".join(api.title for api in _offered() if api.name in names)


def shape_of(messages: Sequence[Mapping[str, Any]]) -> LlmApi:
    """The API every message of `messages` can belong to (see the module docstring); raises `ShapeError`."""
    offered = _offered()
    common: set[ApiName] = {api.name for api in offered}
    seen: list[tuple[int, frozenset[ApiName]]] = []
    for i, message in enumerate(messages):
        fits = apis_reading(message)
        if not fits:
            known = ", ".join(api.title for api in APIS.values())
            raise ShapeError(
                f'{_describe(i, message)} is not a message of any known format ({known}); send "format" or fix '
                "the message."
            )
        narrower = fits & common
        if not narrower:
            j, theirs = next(((j, f) for j, f in seen if not (f & fits)), seen[-1])
            raise ShapeError(
                f"The messages mix formats: {_describe(i, message)} reads as {titles(fits)} but "
                f"{_describe(j, messages[j])} as {titles(theirs)}; "
                'send one format (and "format" to name it).'
            )
        common &= narrower
        seen.append((i, fits))
    return next(api for api in offered if api.name in common)


def detect_api(messages: Sequence[object]) -> LlmApi:
    """The `Compactor`'s detection: `shape_of`; for a list it refuses, the first message only one API reads
    (the `Compactor` then reads every message in that API, naming one it cannot), else `PLAIN`."""
    plain = [_plain(m) for m in messages]
    try:
        return shape_of(plain)
    except ShapeError:
        pass
    for message in plain:
        fits = apis_reading(message)
        if len(fits) == 1:
            return APIS[next(iter(fits))]
    return APIS[PLAIN]
