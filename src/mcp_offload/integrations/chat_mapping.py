"""The way back from a compacted OpenAI Chat list to a framework's own messages.

An adapter converts each framework message (or message part) to one Chat Completions dict and records where it came
from (`ChatMapping.add`). After `compact`, `resolve` tells for every dict of the result what it stands for:
- `Kept`: a dict handed in, unchanged: the adapter returns its original message (part) untouched;
- `Replaced`: a tool answer whose content was stored: the adapter returns its original with the new text;
- `Inserted`: a message the compactor added (the note standing for older turns, moved into a transcript).
Dicts handed in that are not in the result were moved into that transcript.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Origin = TypeVar("Origin")


@dataclass(frozen=True, slots=True)
class Kept(Generic[Origin]):
    origin: Origin


@dataclass(frozen=True, slots=True)
class Replaced(Generic[Origin]):
    origin: Origin
    text: str  # the new content (reference + preview)


@dataclass(frozen=True, slots=True)
class Inserted:
    role: str
    text: str


def content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class ChatMapping(Generic[Origin]):
    """Chat dicts in order, each with the framework message (part) it came from."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._origins: list[Origin] = []
        self._by_call: dict[str, Origin] = {}

    def add(self, message: dict[str, Any], origin: Origin) -> None:
        self.messages.append(message)
        self._origins.append(origin)
        call_id = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(call_id, str):
            self._by_call[call_id] = origin

    def resolve(
        self, handed_in: Sequence[dict[str, Any]], compacted: Sequence[dict[str, Any]]
    ) -> list[Kept[Origin] | Replaced[Origin] | Inserted]:
        """`handed_in`: the list given to `compact` (the dicts of `messages`): `compact` returns those very objects for
        the messages it leaves untouched."""
        by_id: dict[int, deque[Origin]] = defaultdict(deque)
        for message, origin in zip(handed_in, self._origins, strict=True):
            by_id[id(message)].append(origin)
        out: list[Kept[Origin] | Replaced[Origin] | Inserted] = []
        for message in compacted:
            queue = by_id.get(id(message))
            if queue:
                out.append(Kept(queue.popleft()))
                continue
            call_id = message.get("tool_call_id")
            if message.get("role") == "tool" and isinstance(call_id, str) and call_id in self._by_call:
                out.append(Replaced(self._by_call[call_id], content_text(message.get("content"))))
                continue
            out.append(Inserted(str(message.get("role", "user")), content_text(message.get("content"))))
        return out
