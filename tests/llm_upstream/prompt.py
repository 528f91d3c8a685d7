"""Render a request into the prompt a provider would build from it: a list of segments, in the provider's order.

A segment is one unit of the prompt: a tool definition, a system block, a message content block (Anthropic) or a
whole message / input item (OpenAI). Each has the text the model sees, its token count (the project's o200k
counter: Claude's tokenizer is not public, and one tokenizer for every mode keeps ratios honest) and, for Anthropic,
the `cache_control` breakpoint it carries. Things the model does not see do not count: `cache_control` itself,
key order of block metadata, signatures. Tool inputs and tool definitions are rendered as received (key order
kept): a gateway that reorders them changes the prompt, as it would at the provider.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcp_offload.tokens.vocab import load_counter

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, slots=True)
class Segment:
    digest: bytes  # sha256 of what the model sees
    tokens: int
    breakpoint_ttl: str | None = None  # Anthropic: "5m" / "1h" when the block carries cache_control


class TokenCache:
    """Token counts of segment texts, by digest (big tool results are counted once per process)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries
        self._counter = load_counter()

    def segment(self, text: str, breakpoint_ttl: str | None = None) -> Segment:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            tokens = self._counts.get(digest)
            if tokens is not None:
                self._counts.move_to_end(digest)
        if tokens is None:
            tokens = self._counter.count(text) if len(text) < 4_000_000 else self._counter.count_large(text)[0]
            with self._lock:
                self._counts[digest] = tokens
                if len(self._counts) > self._max:
                    self._counts.popitem(last=False)
        return Segment(digest, tokens, breakpoint_ttl)

    def count(self, text: str) -> int:
        return self.segment(text).tokens


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _without_cc(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _ttl(block: Any) -> str | None:
    cc = block.get("cache_control") if isinstance(block, dict) else None
    return str(cc.get("ttl", "5m")) if isinstance(cc, dict) else None


# -- Anthropic ---------------------------------------------------------------------------------------------------
def anthropic_block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"<tool_use id={block.get('id')} name={block.get('name')}>{_json(block.get('input'))}</tool_use>"
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            content = "".join(
                p.get("text", "") if p.get("type") == "text" else _json(_without_cc(p))
                for p in content
                if isinstance(p, dict)
            )
        error = " error" if block.get("is_error") else ""
        return f"<tool_result id={block.get('tool_use_id')}{error}>{content}</tool_result>"
    if kind == "thinking":
        return f"<thinking>{block.get('thinking', '')}</thinking>"
    if kind == "redacted_thinking":
        return f"<redacted_thinking>{block.get('data', '')}</redacted_thinking>"
    return _json({k: block[k] for k in sorted(block) if k != "cache_control"})


def render_anthropic(body: dict[str, Any], tokens: TokenCache) -> list[Segment]:
    segments: list[Segment] = []
    for tool in body.get("tools") or []:
        segments.append(tokens.segment("<tool>" + _json(_without_cc(tool)), _ttl(tool)))
    system = body.get("system")
    if isinstance(system, str) and system:
        segments.append(tokens.segment("<system>" + system))
    elif isinstance(system, list):
        for block in system:
            segments.append(tokens.segment("<system>" + str(block.get("text", "")), _ttl(block)))
    for msg in body.get("messages") or []:
        marker = f"\n\n{msg.get('role')}: "
        content = msg.get("content")
        if isinstance(content, str):
            if content:
                segments.append(tokens.segment(marker + content))
            continue
        for j, block in enumerate(content or []):
            ttl = _ttl(block)
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                ttl = ttl or next((t for t in map(_ttl, block["content"]) if t), None)
            segments.append(tokens.segment((marker if j == 0 else "") + anthropic_block_text(block), ttl))
    if isinstance(body.get("cache_control"), dict) and segments:  # automatic caching: the last cacheable block
        last = segments[-1]
        segments[-1] = Segment(
            last.digest, last.tokens, last.breakpoint_ttl or str(body["cache_control"].get("ttl", "5m"))
        )
    return segments


# -- OpenAI Chat -------------------------------------------------------------------------------------------------
def _parts_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        str(p.get("text", p.get("refusal", ""))) if p.get("type") in ("text", "refusal", "input_text", "output_text")
        else _json(p)
        for p in content if isinstance(p, dict)
    )  # fmt: skip


def render_chat(body: dict[str, Any], tokens: TokenCache) -> list[Segment]:
    segments = [tokens.segment("<tool>" + _json(tool)) for tool in body.get("tools") or []]
    for msg in body.get("messages") or []:
        text = f"<|im_start|>{msg.get('role')}\n{_parts_text(msg.get('content'))}"
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or call.get("custom") or {}
            text += f"<tool_call id={call.get('id')} name={fn.get('name')}>{fn.get('arguments', fn.get('input', ''))}"
        if msg.get("role") == "tool":
            text = f"<|im_start|>tool id={msg.get('tool_call_id')}\n{_parts_text(msg.get('content'))}"
        segments.append(tokens.segment(text + "<|im_end|>"))
    return segments


# -- OpenAI Responses --------------------------------------------------------------------------------------------
def responses_item_text(item: dict[str, Any]) -> str:
    kind = item.get("type", "message")
    if kind == "message":
        return f"<|im_start|>{item.get('role')}\n{_parts_text(item.get('content'))}<|im_end|>"
    if kind == "function_call":
        return f"<function_call id={item.get('call_id')} name={item.get('name')}>{item.get('arguments', '')}"
    if kind == "custom_tool_call":
        return f"<custom_tool_call id={item.get('call_id')} name={item.get('name')}>{item.get('input', '')}"
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        return f"<tool_output id={item.get('call_id')}>{output if isinstance(output, str) else _parts_text(output)}"
    if kind == "reasoning":
        return "<reasoning>" + (item.get("encrypted_content") or _json(item.get("summary")))
    return _json({k: item[k] for k in sorted(item) if k not in ("id", "status")})


def render_responses(body: dict[str, Any], prior: list[dict[str, Any]], tokens: TokenCache) -> list[Segment]:
    segments = [tokens.segment("<tool>" + _json(tool)) for tool in body.get("tools") or []]
    if body.get("instructions"):
        segments.append(tokens.segment("<|im_start|>system\n" + str(body["instructions"]) + "<|im_end|>"))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in [*prior, *(items or [])]:
        segments.append(tokens.segment(responses_item_text(item)))
    return segments


# -- Gemini ------------------------------------------------------------------------------------------------------
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def part_text(part: dict[str, Any]) -> str:
    if "text" in part:
        return ("<thought>" if part.get("thought") else "") + str(part["text"])
    if "functionCall" in part:
        call = part["functionCall"]
        return f"<function_call name={call.get('name')}>{_json(call.get('args', {}))}"
    if "functionResponse" in part:
        answer = part["functionResponse"]
        return f"<function_response name={answer.get('name')}>{_json(answer.get('response'))}"
    return _json({k: v for k, v in part.items() if k != "thoughtSignature"})


def render_gemini(body: dict[str, Any], tokens: TokenCache) -> list[Segment]:
    get = {_camel(k): v for k, v in body.items()}
    segments = [tokens.segment("<tool>" + _json(tool)) for tool in get.get("tools") or []]
    system = get.get("systemInstruction")
    for part in (system or {}).get("parts") or []:
        segments.append(tokens.segment("<system>" + part_text(part)))
    for content in get.get("contents") or []:
        marker = f"<start_of_turn>{content.get('role', 'user')}\n"
        for k, part in enumerate(content.get("parts") or []):
            segments.append(tokens.segment((marker if k == 0 else "") + part_text(part)))
    return segments


# -- Bedrock Converse ---------------------------------------------------------------------------------------------
def converse_block_text(block: dict[str, Any]) -> str:
    kind, value = next(iter(block.items()))
    if kind == "text":
        return str(value)
    if kind == "toolUse":
        return f"<tool_use id={value.get('toolUseId')} name={value.get('name')}>{_json(value.get('input'))}</tool_use>"
    if kind == "toolResult":
        content = "".join(
            str(p["text"]) if "text" in p else _json(p.get("json", p)) for p in value.get("content") or []
        )
        error = " error" if value.get("status") == "error" else ""
        return f"<tool_result id={value.get('toolUseId')}{error}>{content}</tool_result>"
    if kind == "reasoningContent":
        text = (value.get("reasoningText") or {}).get("text")
        return f"<thinking>{text if text is not None else value.get('redactedContent', '')}</thinking>"
    return _json({kind: value})


def render_converse(body: dict[str, Any], tokens: TokenCache) -> list[Segment]:
    """Converse's prompt: tools, system blocks, message blocks; a `cachePoint` block is a breakpoint on the segment
    before it (the prefix up to there), with its `ttl`."""
    segments: list[Segment] = []

    def mark(point: dict[str, Any]) -> None:
        if segments:
            last = segments[-1]
            segments[-1] = Segment(last.digest, last.tokens, str(point.get("ttl", "5m")))

    for tool in (body.get("toolConfig") or {}).get("tools") or []:
        if "cachePoint" in tool:
            mark(tool["cachePoint"])
        else:
            segments.append(tokens.segment("<tool>" + _json(tool)))
    for block in body.get("system") or []:
        if "cachePoint" in block:
            mark(block["cachePoint"])
        else:
            segments.append(tokens.segment("<system>" + str(block.get("text", ""))))
    for msg in body.get("messages") or []:
        marker = f"\n\n{msg.get('role')}: "
        first = True
        for block in msg.get("content") or []:
            if "cachePoint" in block:
                mark(block["cachePoint"])
                continue
            segments.append(tokens.segment((marker if first else "") + converse_block_text(block)))
            first = False
    return segments


def prompt_digests(api: str, body: dict[str, Any], prior: list[dict[str, Any]] | None = None) -> list[bytes]:
    """The segment digests of a request's prompt: what the model sees, in order (for prefix assertions)."""
    tokens = _DIGEST_ONLY
    if api == "anthropic":
        return [s.digest for s in render_anthropic(body, tokens)]
    if api == "openai_chat":
        return [s.digest for s in render_chat(body, tokens)]
    if api == "gemini":
        return [s.digest for s in render_gemini(body, tokens)]
    if api == "converse":
        return [s.digest for s in render_converse(body, tokens)]
    return [s.digest for s in render_responses(body, prior or [], tokens)]


def extends(api: str, earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """True when `later`'s prompt starts with all of `earlier`'s (a provider cache would hit it whole)."""
    a, b = prompt_digests(api, earlier), prompt_digests(api, later)
    return len(a) <= len(b) and b[: len(a)] == a


class _DigestOnly(TokenCache):
    """A TokenCache that does not count (digests are all `prompt_digests` needs)."""

    def __init__(self) -> None:
        pass

    def segment(self, text: str, breakpoint_ttl: str | None = None) -> Segment:
        return Segment(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), 0, breakpoint_ttl)


_DIGEST_ONLY = _DigestOnly()
