"""Validate a Bedrock `Converse` / `ConverseStream` request body the way the service does; InvalidRequest carries its
wording (a 400 `ValidationException`).

Checked: unknown top-level fields; `messages` present, starting with a user message and alternating; every content
block a union with exactly one member, and of a kind its role may send (`toolUse` and `reasoningContent` from the
assistant, `toolResult` from the user); text not blank; each `toolUse` answered by a `toolResult` with its id in the
very next message, and no result without a call; `toolConfig` present whenever the history holds tool blocks, its
tool names unique and well-formed with an object `inputSchema.json`; a `toolChoice` naming a real tool; reasoning
blocks carrying the signature this upstream gave them; at most 4 `cachePoint` blocks in the whole request.
"""

from __future__ import annotations

import re
from typing import Any

from llm_upstream.errors import InvalidRequest
from llm_upstream.signing import Signer

FIELDS = frozenset(
    {"messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig", "additionalModelRequestFields",
     "promptVariables", "additionalModelResponseFieldPaths", "requestMetadata", "performanceConfig", "serviceTier",
     "outputConfig", "projectIdentifier"}
)  # fmt: skip
USER_BLOCKS = frozenset({"text", "image", "document", "video", "audio", "toolResult", "guardContent", "cachePoint",
                         "searchResult"})  # fmt: skip
ASSISTANT_BLOCKS = frozenset({"text", "toolUse", "reasoningContent", "cachePoint", "citationsContent", "image"})
RESULT_BLOCKS = frozenset({"json", "text", "image", "document", "video", "searchResult"})
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_CACHE_POINTS = 4


def reasoning_signature_text(text: str) -> str:
    return "reasoning:" + text


def validate_converse_request(body: Any, signer: Signer) -> None:
    if not isinstance(body, dict):
        raise InvalidRequest("1 validation error detected: the request body is not a JSON object")
    for key in body:
        if key not in FIELDS:
            raise InvalidRequest(f"The model returned the following errors: {key}: Extra inputs are not permitted")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("A conversation must start with a user message. Try again with a conversation that "
                             "starts with a user message.")  # fmt: skip
    cache_points = _system(body.get("system"))
    names, tool_points = _tools(body.get("toolConfig"))
    cache_points += tool_points
    uses_tools = False
    expected: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise InvalidRequest(
                f"1 validation error detected: Value at 'messages.{i + 1}.member.role' failed to satisfy constraint: "
                "Member must satisfy enum value set: [user, assistant]"
            )
        role = message["role"]
        if i == 0 and role != "user":
            raise InvalidRequest("A conversation must start with a user message. Try again with a conversation that "
                                 "starts with a user message.")  # fmt: skip
        if i and messages[i - 1].get("role") == role:
            raise InvalidRequest("A conversation must alternate between user and assistant roles. Make sure the "
                                 "conversation alternates between user and assistant roles and try again.")  # fmt: skip
        content = message.get("content")
        if not isinstance(content, list) or not content:
            raise InvalidRequest(f"The content field in the Message object at messages.{i} is empty. Add a "
                                 "ContentBlock object to the content field and try again.")  # fmt: skip
        results: list[str] = []
        calls: list[str] = []
        for k, block in enumerate(content):
            kind = _member(block, f"messages.{i}.content.{k}")
            if kind not in (USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS):
                raise InvalidRequest(f"messages.{i}.content.{k}: a {role} message cannot hold a {kind} block")
            value = block[kind]
            if kind == "text" and (not isinstance(value, str) or not value.strip()):
                raise InvalidRequest(f"The text field in the ContentBlock object at messages.{i}.content.{k} is blank. "
                                     "Add text to the text field, and try again.")  # fmt: skip
            elif kind == "cachePoint":
                cache_points += _cache_point(value, f"messages.{i}.content.{k}")
            elif kind == "toolUse":
                uses_tools = True
                if not isinstance(value, dict) or not isinstance(value.get("toolUseId"), str) or "input" not in value:
                    raise InvalidRequest(f"messages.{i}.content.{k}.toolUse: toolUseId, name and input are required")
                calls.append(value["toolUseId"])
            elif kind == "toolResult":
                uses_tools = True
                _result(value, f"messages.{i}.content.{k}.toolResult")
                results.append(value["toolUseId"])
            elif kind == "reasoningContent":
                _reasoning(value, signer, f"messages.{i}.content.{k}")
        if role == "user":
            missing = [c for c in expected if c not in results]
            if missing:
                raise InvalidRequest(f"Expected toolResult blocks at messages.{i}.content for the following Ids: "
                                     f"{', '.join(missing)}")  # fmt: skip
            if len(results) > len(expected) or any(r not in expected for r in results):
                raise InvalidRequest(f"The number of toolResult blocks at messages.{i}.content exceeds the number of "
                                     "toolUse blocks of previous turn.")  # fmt: skip
            expected = []
        else:
            expected = calls
    if uses_tools and body.get("toolConfig") is None:
        raise InvalidRequest("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
    choice = (body.get("toolConfig") or {}).get("toolChoice")
    if isinstance(choice, dict) and "tool" in choice and (choice["tool"] or {}).get("name") not in names:
        raise InvalidRequest("The tool named in toolChoice is not one of the tools of toolConfig.")
    if cache_points > MAX_CACHE_POINTS:
        raise InvalidRequest(f"The number of cachePoint blocks ({cache_points}) exceeds the maximum of "
                             f"{MAX_CACHE_POINTS}.")  # fmt: skip


def _member(block: Any, where: str) -> str:
    if not isinstance(block, dict) or len(block) != 1:
        raise InvalidRequest(f"1 validation error detected: Value at '{where}' failed to satisfy constraint: Member "
                             "must have exactly one member of the union set")  # fmt: skip
    return str(next(iter(block)))


def _cache_point(value: Any, where: str) -> int:
    if not isinstance(value, dict) or value.get("type") != "default" or value.get("ttl", "5m") not in ("5m", "1h"):
        raise InvalidRequest(f"{where}.cachePoint: type must be 'default' and ttl '5m' or '1h'")
    return 1


def _system(system: Any) -> int:
    if system is None:
        return 0
    if not isinstance(system, list):
        raise InvalidRequest("system: a list of SystemContentBlock objects is expected")
    points = 0
    for k, block in enumerate(system):
        kind = _member(block, f"system.{k}")
        if kind == "cachePoint":
            points += _cache_point(block[kind], f"system.{k}")
        elif kind == "text" and (not isinstance(block[kind], str) or not block[kind].strip()):
            raise InvalidRequest(f"The text field in the SystemContentBlock object at system.{k} is blank.")
        elif kind not in ("text", "guardContent"):
            raise InvalidRequest(f"system.{k}: unknown block {kind}")
    return points


def _tools(config: Any) -> tuple[set[str], int]:
    if config is None:
        return set(), 0
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list) or not tools:
        raise InvalidRequest("1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: "
                             "Member must have length greater than or equal to 1")  # fmt: skip
    names: set[str] = set()
    points = 0
    for t, tool in enumerate(tools):
        kind = _member(tool, f"toolConfig.tools.{t}")
        if kind == "cachePoint":
            points += _cache_point(tool[kind], f"toolConfig.tools.{t}")
            continue
        if kind != "toolSpec":
            continue  # systemTool
        spec = tool[kind]
        name = spec.get("name") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise InvalidRequest(f"1 validation error detected: Value at 'toolConfig.tools.{t + 1}.member.toolSpec."
                                 "name' failed to satisfy constraint: Member must satisfy regular expression pattern: "
                                 "[a-zA-Z0-9_-]+")  # fmt: skip
        schema = (spec.get("inputSchema") or {}).get("json")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise InvalidRequest(f"The value at toolConfig.tools.{t}.toolSpec.inputSchema.json.type must be object.")
        if name in names:
            raise InvalidRequest(f"The toolConfig contains duplicate tool names: {name}.")
        names.add(name)
    return names, points


def _result(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("toolUseId"), str):
        raise InvalidRequest(f"{where}: toolUseId is required")
    content = value.get("content")
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}.content: a list of ToolResultContentBlock objects is required")
    for k, part in enumerate(content):
        kind = _member(part, f"{where}.content.{k}")
        if kind not in RESULT_BLOCKS:
            raise InvalidRequest(f"{where}.content.{k}: unknown tool result block {kind}")
    if value.get("status", "success") not in ("success", "error"):
        raise InvalidRequest(f"{where}.status: must be success or error")


def _reasoning(value: Any, signer: Signer, where: str) -> None:
    text_block = value.get("reasoningText") if isinstance(value, dict) else None
    if isinstance(text_block, dict):
        if not signer.verify(reasoning_signature_text(str(text_block.get("text", ""))), text_block.get("signature")):
            raise InvalidRequest(f"{where}.reasoningContent: the reasoning signature is invalid. The reasoning text "
                                 "must be sent back exactly as the model returned it.")  # fmt: skip
    elif not isinstance(value, dict) or signer.unseal(value.get("redactedContent")) is None:
        raise InvalidRequest(f"{where}.reasoningContent: invalid redacted reasoning content")
