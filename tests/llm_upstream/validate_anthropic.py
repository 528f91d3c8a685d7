"""Validate an Anthropic Messages request the way the API does; raise InvalidRequest with its wording.

Checked: required fields and unknown top-level fields; roles (first `user`, then alternating); non-empty content;
known block types per role; `tool_use` ids unique and each answered by a `tool_result` in the very next user
message, `tool_result` blocks first there, no orphan results; tools defined whenever the history holds tool blocks;
tool names unique and well-formed; `tool_choice` naming a real tool; thinking blocks carrying the signature this
upstream gave them (`Signer`), a thinking block first in the assistant turn being continued when thinking is on;
at most 4 `cache_control` breakpoints. The real API merges consecutive same-role turns; this simulator refuses them,
because a gateway that produces them has a bug.
"""

from __future__ import annotations

import re
from typing import Any

from llm_upstream.errors import InvalidRequest
from llm_upstream.signing import Signer

MESSAGE_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature", "top_p",
        "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
        "context_management", "output_config", "output_format", "cache_control", "inference_geo", "speed",
    }
)  # fmt: skip
COUNT_TOKENS_FIELDS = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
     "output_config", "output_format", "cache_control"}
)  # fmt: skip
USER_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_result", "container_upload"})
ASSISTANT_BLOCKS = frozenset(
    {
        "text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
        "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result", "tool_search_tool_result", "mcp_tool_use", "mcp_tool_result",
        "container_upload", "compaction",
    }
)  # fmt: skip
TOOL_RESULT_CONTENT = frozenset({"text", "image", "document", "search_result"})
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
ID_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
TYPED_TOOL_RE = re.compile(r"^[a-z_]+_\d{8}$")  # bash_20250124, web_search_20250305, …
MAX_BREAKPOINTS = 4


PER_TURN_SYSTEM_BETA = "per-turn-control-2026-07-01"  # allows `system` messages between the turns


def validate_messages_request(
    body: Any, signer: Signer, *, count_tokens: bool = False, betas: frozenset[str] = frozenset()
) -> None:
    if not isinstance(body, dict):
        raise InvalidRequest("Input should be a valid dictionary")
    allowed = COUNT_TOKENS_FIELDS if count_tokens else MESSAGE_FIELDS
    for key in body:
        if key not in allowed:
            raise InvalidRequest(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("model: Field required")
    if not count_tokens:
        max_tokens = body.get("max_tokens")
        if "max_tokens" not in body:
            raise InvalidRequest("max_tokens: Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")
    tool_names = _validate_tools(body.get("tools"))
    thinking_on = _validate_thinking(body, count_tokens)
    _validate_tool_choice(body.get("tool_choice"), tool_names, thinking_on)
    breakpoints = _validate_system(body.get("system"))
    breakpoints += sum(1 for t in body.get("tools") or [] if isinstance(t, dict) and "cache_control" in t)
    breakpoints += _validate_messages(
        body.get("messages"),
        signer,
        thinking_on,
        has_tools=bool(tool_names),
        system_turns=PER_TURN_SYSTEM_BETA in betas,
    )
    if isinstance(body.get("cache_control"), dict):
        breakpoints += 1
    if breakpoints > MAX_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise InvalidRequest("stream: Input should be a valid boolean")


def _validate_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise InvalidRequest(f"tools.{i}: Input should be a valid dictionary")
        kind = tool.get("type", "custom")
        name = tool.get("name")
        if kind in (None, "custom"):
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise InvalidRequest(f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict):
                raise InvalidRequest(f"tools.{i}.custom.input_schema: Field required")
            if schema.get("type") != "object":
                raise InvalidRequest(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
            if "description" in tool and not isinstance(tool["description"], str):
                raise InvalidRequest(f"tools.{i}.custom.description: Input should be a valid string")
        elif isinstance(kind, str) and TYPED_TOOL_RE.match(kind):
            if not isinstance(name, str) or not name:
                raise InvalidRequest(f"tools.{i}.{kind}.name: Field required")
        else:
            raise InvalidRequest(
                f"tools.{i}: Input tag '{kind}' found using 'type' does not match any of the expected tags"
            )
        _check_cache_control(tool.get("cache_control"), f"tools.{i}")
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.add(name)
    return names


def _validate_thinking(body: dict[str, Any], count_tokens: bool) -> bool:
    thinking = body.get("thinking")
    if thinking is None:
        return False
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled", "adaptive"):
        raise InvalidRequest(
            "thinking: Input tag found using 'type' does not match any of the expected tags: 'enabled', "
            "'disabled', 'adaptive'"
        )
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            raise InvalidRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if not count_tokens and budget >= body.get("max_tokens", 0):
            raise InvalidRequest("`max_tokens` must be greater than `thinking.budget_tokens`.")
    return thinking["type"] in ("enabled", "adaptive")


def _validate_tool_choice(choice: Any, tool_names: set[str], thinking_on: bool) -> None:
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        raise InvalidRequest(
            "tool_choice: Input tag found using 'type' does not match any of the expected tags: 'auto', 'any', "
            "'tool', 'none'"
        )
    if choice["type"] == "tool" and choice.get("name") not in tool_names:
        raise InvalidRequest(f"tool_choice.tool.name: tool '{choice.get('name')}' is not defined in `tools`")
    if thinking_on and choice["type"] in ("any", "tool"):
        raise InvalidRequest("Thinking may not be enabled when tool_choice forces tool use.")


def _validate_system(system: Any) -> int:
    if system is None or isinstance(system, str):
        return 0
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a valid string or list")
    marks = 0
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise InvalidRequest(f"system.{i}: Input should be a text block")
        if not block["text"]:
            raise InvalidRequest("system: text content blocks must be non-empty")
        marks += _check_cache_control(block.get("cache_control"), f"system.{i}")
    return marks


def _check_cache_control(cc: Any, where: str) -> int:
    if cc is None:
        return 0
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral" or cc.get("ttl", "5m") not in ("5m", "1h"):
        raise InvalidRequest(f"{where}.cache_control: Input should be {{'type': 'ephemeral', 'ttl': '5m' | '1h'}}")
    return 1


def _validate_messages(messages: Any, signer: Signer, thinking_on: bool, *, has_tools: bool, system_turns: bool) -> int:
    if not isinstance(messages, list):
        raise InvalidRequest(
            "messages: Field required" if messages is None else "messages: Input should be a valid list"
        )
    if not messages:
        raise InvalidRequest("messages: at least one message is required")
    marks = 0
    seen_tool_use: set[str] = set()
    previous_uses: list[str] = []  # tool_use ids of the previous assistant message, in order
    uses_tool_blocks = False
    last_role = ""  # of the previous user / assistant message (`system` turns sit between them)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidRequest(f"messages.{i}: Input should be a valid dictionary")
        role = msg.get("role")
        if role == "system" and system_turns and i > 0:
            _validate_system_turn(msg, i, previous_uses)
            continue
        if role not in ("user", "assistant"):
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if set(msg) - {"role", "content"}:
            extra = sorted(set(msg) - {"role", "content"})[0]
            raise InvalidRequest(f"messages.{i}.{extra}: Extra inputs are not permitted")
        if i == 0 and role != "user":
            raise InvalidRequest('messages: first message must use the "user" role')
        if last_role == role:
            raise InvalidRequest(
                f'messages: roles must alternate between "user" and "assistant", but found multiple "{role}" '
                "roles in a row"
            )
        content = msg.get("content")
        last = i == len(messages) - 1
        if isinstance(content, str):
            if not content and not (last and role == "assistant"):
                raise InvalidRequest(
                    f"messages.{i}: all messages must have non-empty content except for the optional final "
                    "assistant message"
                )
            blocks: list[Any] = []
        elif isinstance(content, list):
            if not content and not (last and role == "assistant"):
                raise InvalidRequest(
                    f"messages.{i}: all messages must have non-empty content except for the optional final "
                    "assistant message"
                )
            blocks = content
        else:
            raise InvalidRequest(f"messages.{i}.content: Input should be a valid string or list")
        results_here: list[str] = []
        uses_here: list[str] = []
        for j, block in enumerate(blocks):
            where = f"messages.{i}.content.{j}"
            marks += _validate_block(block, role, where, signer)
            kind = block["type"]
            if kind == "tool_use":
                uses_tool_blocks = True
                if block["id"] in seen_tool_use:
                    raise InvalidRequest(f"{where}: `tool_use` ids must be unique")
                seen_tool_use.add(block["id"])
                uses_here.append(block["id"])
            elif kind == "tool_result":
                uses_tool_blocks = True
                if j != len(results_here):
                    raise InvalidRequest(
                        f"{where}: `tool_result` blocks must come first in the user message, before any other content"
                    )
                if block["tool_use_id"] not in previous_uses or block["tool_use_id"] in results_here:
                    raise InvalidRequest(
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {block['tool_use_id']}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
                results_here.append(block["tool_use_id"])
        if role == "user" and previous_uses:
            missing = [u for u in previous_uses if u not in results_here]
            if missing:
                raise InvalidRequest(
                    f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message."
                )
        if role == "assistant" and uses_here and last:
            raise InvalidRequest(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(uses_here)}. Each `tool_use` block must have a corresponding `tool_result` block "
                "in the next message."
            )
        previous_uses = uses_here if role == "assistant" else []
        last_role = role
    if uses_tool_blocks and not has_tools:
        raise InvalidRequest("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    if thinking_on and len(messages) >= 2:
        _check_thinking_first(messages)
    return marks


def _validate_system_turn(msg: dict[str, Any], i: int, previous_uses: list[str]) -> None:
    """A `system` message between turns (beta): text only, and not between a tool_use and its tool_result."""
    if previous_uses:
        raise InvalidRequest(
            f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(previous_uses)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message."
        )
    content = msg.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not blocks:
        raise InvalidRequest(f"messages.{i}: all messages must have non-empty content")
    for j, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text" or not block.get("text"):
            raise InvalidRequest(f"messages.{i}.content.{j}: system messages hold non-empty text blocks only")


def _check_thinking_first(messages: list[dict[str, Any]]) -> None:
    """With thinking on, the assistant turn being continued by tool results must start with a thinking block."""
    messages = [m for m in messages if m.get("role") != "system"]
    if len(messages) < 2:
        return
    last = messages[-1]
    if last["role"] != "user" or not isinstance(last["content"], list):
        return
    if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]):
        return
    turn = messages[-2]
    content = turn["content"] if isinstance(turn["content"], list) else []
    first = content[0]["type"] if content else "text"
    if first not in ("thinking", "redacted_thinking"):
        raise InvalidRequest(
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block "
            "(preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
        )


def _validate_block(block: Any, role: str, where: str, signer: Signer) -> int:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary with a 'type'")
    kind = block["type"]
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
    if kind not in allowed:
        raise InvalidRequest(
            f"{where}: Input tag '{kind}' found using 'type' does not match any of the expected tags: "
            + ", ".join(f"'{t}'" for t in sorted(allowed))
        )
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise InvalidRequest(f"{where}.text.text: Field required")
        if not block["text"]:
            raise InvalidRequest("messages: text content blocks must be non-empty")
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not ID_RE.match(block["id"]):
            raise InvalidRequest(f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not isinstance(block.get("name"), str) or not block["name"]:
            raise InvalidRequest(f"{where}.tool_use.name: Field required")
        if not isinstance(block.get("input"), dict):
            raise InvalidRequest(f"{where}.tool_use.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str) or not ID_RE.match(block["tool_use_id"]):
            raise InvalidRequest(f"{where}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        content = block.get("content", "")
        if isinstance(content, list):
            for k, part in enumerate(content):
                if not isinstance(part, dict) or part.get("type") not in TOOL_RESULT_CONTENT:
                    raise InvalidRequest(
                        f"{where}.tool_result.content.{k}: Input tag does not match any of the expected tags: "
                        "'text', 'image', 'document', 'search_result'"
                    )
                if part["type"] == "text" and not (isinstance(part.get("text"), str) and part["text"]):
                    raise InvalidRequest("messages: text content blocks must be non-empty")
                _check_cache_control(part.get("cache_control"), f"{where}.content.{k}")
        elif not isinstance(content, str):
            raise InvalidRequest(f"{where}.tool_result.content: Input should be a valid string or list")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise InvalidRequest(f"{where}.tool_result.is_error: Input should be a valid boolean")
    elif kind == "thinking":
        if "cache_control" in block:
            raise InvalidRequest(f"{where}.thinking.cache_control: Thinking blocks cannot be cached directly")
        text, signature = block.get("thinking"), block.get("signature")
        shown = isinstance(text, str) and signer.verify(text, signature)
        omitted = text == "" and signer.unseal(signature) is not None  # display "omitted": the text is sealed
        if not (shown or omitted):
            raise InvalidRequest(f"{where}: Invalid `signature` in `thinking` block")
    elif kind == "redacted_thinking":
        if signer.unseal(block.get("data")) is None:
            raise InvalidRequest(f"{where}: Invalid `data` in `redacted_thinking` block")
    elif kind in ("image", "document") and not isinstance(block.get("source"), dict):
        raise InvalidRequest(f"{where}.{kind}.source: Field required")
    return _check_cache_control(block.get("cache_control"), where)
