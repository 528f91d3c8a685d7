"""What every message format exposes to the compactor: a `MessageView` of one message and a `MessageFormat`.

A format (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses input items) reads one message into a
`MessageView`: its role, whether it opens a turn (the user speaking), the tool calls it declares, the tool results it
carries (each with its call id and text / image parts) and its plain text. It rebuilds a message with some parts
replaced by reference text, and writes the one message that stands for older turns. The compactor only ever talks
to this interface; each API's is its package's `messages.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeAlias

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a tool result: text, or an image (its bytes and type) that can be stored as a blob."""

    index: int  # position in the result's part list (0 for a plain string result)
    text: str | None = None
    image: bytes | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result inside a message: where it sits, which call it answers, its parts."""

    slot: int  # position of the result in the message (block index; 0 for a whole-message result)
    call_id: str
    parts: tuple[Part, ...]


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    call_id: str
    name: str
    arguments: str = ""  # the call's arguments as sent (JSON text; a custom tool's raw input)


Line: TypeAlias = "str | tuple[str, ...]"  # a line of a message's plain text, or the pieces it is made of


def result_line(call_id: str, text: str) -> tuple[str, ...]:
    """The line of a tool result in a message's plain text, `[result ID] TEXT`, in pieces (not copied until asked)."""
    return ("[result ", call_id, "] ", text)


@dataclass(frozen=True, slots=True)
class MessageView:
    """What the compactor needs to know about one message."""

    role: str  # "system", "user", "assistant", "tool" or "other" (passed through untouched)
    opens_turn: bool  # the user speaking (not only handing back tool results): a turn boundary
    calls: tuple[ToolCallRef, ...] = ()
    results: tuple[ToolResult, ...] = ()
    # the message's plain text, line by line (`text` joins them): a view is made of every message of every request
    # the gateway rewrites, which needs no text; joined there, a 4 MB tool result would be copied twice each time
    lines: tuple[Line, ...] = ()
    pinned: bool = False  # never moved into a transcript (system / developer instructions)
    images: int = field(default=0)  # image parts anywhere in the message (counted at a flat token cost)

    @property
    def text(self) -> str:
        """The message's plain text, for transcripts and summaries."""
        return "\n".join(line if isinstance(line, str) else "".join(line) for line in self.lines)


@dataclass(slots=True)
class BlocksRead:
    """A message made of blocks (Anthropic's and Converse's `content`, Gemini's `parts`) as its `view` reads it, block
    by block: the tool calls, the tool results, the text lines and the images so far; `view` is the `MessageView`
    they make."""

    calls: list[ToolCallRef] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    texts: list[Line] = field(default_factory=list)
    images: int = 0

    def result(self, slot: int, call_id: str, parts: tuple[Part, ...]) -> None:
        """A tool result block: its parts, its images, and a `[result id]` line per text part."""
        self.images += sum(1 for p in parts if p.image is not None)
        self.results.append(ToolResult(slot, call_id, parts))
        self.texts.extend(result_line(call_id, p.text) for p in parts if p.text is not None)

    def view(self, role: str, *, user: bool) -> MessageView:
        """The view of the message (`user`: its role is the user's; it opens a turn unless it hands back results)."""
        return MessageView(
            role=role,
            opens_turn=user and not self.results,
            calls=tuple(self.calls),
            results=tuple(self.results),
            lines=tuple(self.texts),
            images=self.images,
        )


class MessageFormat(Protocol):
    """One API's message list shape."""

    def to_dict(self, message: object, index: int) -> Message:
        """A plain-dict copy-free view of `message` (an SDK object is dumped; a dict is returned as is)."""
        ...

    def view(self, message: Message, index: int) -> MessageView:
        """Read one message; raises ValueError naming `index` when it is malformed."""
        ...

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        """A new message where the parts of `result` named in `texts` (part index → text) are that text."""
        ...

    def note_message(self, text: str) -> Message:
        """A user message holding `text` (stands for one user message stored whole)."""
        ...

    def prepend_note(self, message: Message, text: str) -> Message:
        """`message` (a user message opening a turn) with `text` as its first content part: the note for older
        turns joins the next user message, so roles still alternate (Anthropic requires it)."""
        ...

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        """`message` with the arguments of call `call_id` replaced by `{"offloaded_arguments": text}` (still the
        shape the API takes for arguments)."""
        ...

    def could_be(self, message: Mapping[str, Any]) -> bool:
        """Whether `message` (plain data) can be a message of this API: what detection (`apis/detect.py`) asks
        each API of a list that names no format."""
        ...


OFFLOADED_ARGUMENTS = "offloaded_arguments"


class UserTextNotes:
    """`note_message` and `prepend_note` of a `MessageFormat` whose notes are user text parts of `text_part_type`
    (the rule is the same for every API; only the part's type name differs)."""

    text_part_type: ClassVar[str]

    def note_message(self, text: str) -> Message:
        return {"role": "user", "content": text}

    def prepend_note(self, message: Message, text: str) -> Message:
        content = message.get("content")
        kind = self.text_part_type
        parts = [{"type": kind, "text": content}] if isinstance(content, str) else list(content or [])
        return {**message, "content": [{"type": kind, "text": text}, *parts]}


def with_text_parts(message: Message, key: str, part_type: str, texts: dict[int, str]) -> Message:
    """`message` whose `key` (a string, or a list of parts) has the parts named in `texts` (part index → text)
    replaced by text parts of `part_type`; a string is part 0."""
    value = message.get(key)
    if isinstance(value, str):
        return {**message, key: texts[0]}
    assert isinstance(value, list)
    return {**message, key: [{"type": part_type, "text": texts[i]} if i in texts else p for i, p in enumerate(value)]}


def bad(index: int, problem: str) -> ValueError:
    return ValueError(f"message {index}: {problem}")


def dump(message: object, index: int) -> Message:
    """A plain dict from a dict or an SDK (pydantic) object; anything else is a ValueError naming the index."""
    if isinstance(message, dict):
        return message
    if type(message).__module__.startswith("langchain_core.messages"):  # a BaseMessage: no role, dumps misleadingly
        raise bad(
            index,
            f"a LangChain {type(message).__name__} is not an API message: compact LangChain messages with "
            "mcp_offload.integrations.langchain (OffloadMessages, OffloadMiddleware or offload_pre_model_hook)",
        )
    model_dump = getattr(message, "model_dump", None)
    if callable(model_dump):
        dumped = model_dump(mode="json", exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    raise bad(index, f"expected a dict or an SDK message object, got {type(message).__name__}")


def dump_block(block: object, index: int) -> Any:
    """A content block as plain data (SDK block objects, e.g. anthropic `ToolUseBlock`, are dumped)."""
    if isinstance(block, dict | str):
        return block
    model_dump = getattr(block, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json", exclude_none=True)
    raise bad(index, f"content block of unsupported type {type(block).__name__}")


def require_str(value: object, index: int, what: str) -> str:
    if not isinstance(value, str):
        raise bad(index, f"{what} must be a string, got {type(value).__name__}")
    return value


def part_types(content: Any) -> list[str] | None:
    """The types of a content list's parts; [] for a string or null content; None for anything else (a part with
    no string `type`, content of another kind): what `could_be` reads a message's content as."""
    if content is None or isinstance(content, str):
        return []
    if not isinstance(content, list):
        return None
    types: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            return None
        types.append(part["type"])
    return types


def is_typed_item(message: Mapping[str, Any]) -> bool:
    """A Responses-style typed item (a call, an output, reasoning, …): a `type` other than `message`."""
    kind = message.get("type")
    return isinstance(kind, str) and kind != "message"
