"""Validate OpenAI Chat Completions and Responses requests the way the API does (InvalidRequest, its wording).

Chat: unknown arguments, roles, content shapes, every `tool` message answering a `tool_calls` id of the assistant
message before it (only tool messages in between), every id answered, tool definitions and `tool_choice`,
`stream_options` only with `stream`.
Responses: unknown parameters, item types, each `function_call_output` (`custom_tool_call_output`) answering an
earlier call of the same kind, every call answered, reasoning `encrypted_content` as this upstream issued it,
`previous_response_id` known.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from llm_upstream.errors import InvalidRequest
from llm_upstream.signing import Signer

CHAT_FIELDS = frozenset(
    {
        "model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
        "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
        "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options", "temperature",
        "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    }
)  # fmt: skip
RESPONSES_FIELDS = frozenset(
    {
        "model", "input", "instructions", "background", "conversation", "include", "max_output_tokens",
        "max_tool_calls", "metadata", "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
        "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store", "stream",
        "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
        "user", "context_management", "client_metadata",
    }
)  # fmt: skip
FUNCTION_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CHAT_USER_PARTS = frozenset({"text", "image_url", "input_audio", "file"})
CHAT_ASSISTANT_PARTS = frozenset({"text", "refusal"})
RESPONSES_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio"})
RESPONSES_OUTPUT_PARTS = frozenset({"output_text", "refusal"})
RESPONSES_ITEMS = frozenset(
    {
        "message", "function_call", "function_call_output", "reasoning", "custom_tool_call",
        "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
        "apply_patch_call", "apply_patch_call_output", "web_search_call", "file_search_call", "computer_call",
        "computer_call_output", "image_generation_call", "code_interpreter_call", "mcp_list_tools",
        "mcp_approval_request", "mcp_approval_response", "mcp_call", "item_reference", "compaction",
    }
)  # fmt: skip
RESPONSES_TOOLS = frozenset(
    {
        "function", "custom", "web_search", "web_search_preview", "file_search", "local_shell", "shell",
        "apply_patch", "mcp", "code_interpreter", "image_generation", "computer_use_preview", "namespace",
        "tool_search",
    }
)  # fmt: skip


def validate_chat_request(body: Any) -> None:
    if not isinstance(body, dict):
        raise InvalidRequest("We could not parse the JSON body of your request.")
    for key in body:
        if key not in CHAT_FIELDS:
            raise InvalidRequest(f"Unrecognized request argument supplied: {key}", param=key)
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("you must provide a model parameter", param="model")
    if body.get("stream_options") is not None and not body.get("stream"):
        raise InvalidRequest(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param="stream_options"
        )
    names = _chat_tools(body.get("tools"))
    _chat_tool_choice(body.get("tool_choice"), names)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequest("Missing required parameter: 'messages'.", param="messages")
    if not messages:
        raise InvalidRequest(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            param="messages",
        )
    pending: list[str] = []  # ids of the open tool_calls group
    pending_at = -1
    answered: set[str] = set()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidRequest(f"Invalid type for 'messages[{i}]': expected an object.", param=f"messages[{i}]")
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise InvalidRequest(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', "
                "'tool', and 'developer'.",
                param=f"messages[{i}].role",
            )
        if role == "tool":
            if pending_at < 0:
                raise InvalidRequest(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                raise InvalidRequest(
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous message.",
                    param=f"messages.[{i}].tool_call_id",
                )
            answered.add(call_id)
            _chat_content(msg.get("content"), i, CHAT_ASSISTANT_PARTS - {"refusal"}, required=True)
            continue
        _close_group(pending, answered, pending_at)
        pending, pending_at, answered = [], -1, set()
        if role == "assistant":
            calls = msg.get("tool_calls")
            if calls is not None:
                pending = _chat_tool_calls(calls, i)
                pending_at = i if pending else -1
            if msg.get("content") is None and not pending and msg.get("function_call") is None:
                raise InvalidRequest(
                    "Invalid value for 'content': expected a string, got null.", param=f"messages.[{i}].content"
                )
            _chat_content(msg.get("content"), i, CHAT_ASSISTANT_PARTS, required=False)
        else:
            parts = CHAT_USER_PARTS if role == "user" else frozenset({"text"})
            _chat_content(msg.get("content"), i, parts, required=True)
    _close_group(pending, answered, pending_at)


def _close_group(pending: list[str], answered: set[str], at: int) -> None:
    missing = [c for c in pending if c not in answered]
    if missing:
        raise InvalidRequest(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(missing)}",
            param=f"messages.[{at}].role",
        )


def _chat_tool_calls(calls: Any, i: int) -> list[str]:
    if not isinstance(calls, list):
        raise InvalidRequest(
            f"Invalid type for 'messages[{i}].tool_calls': expected an array.", param=f"messages[{i}].tool_calls"
        )
    ids: list[str] = []
    for k, call in enumerate(calls):
        where = f"messages[{i}].tool_calls[{k}]"
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            raise InvalidRequest(f"Missing required parameter: '{where}.id'.", param=f"{where}.id")
        if call.get("type", "function") == "function":
            fn = call.get("function")
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise InvalidRequest(f"Missing required parameter: '{where}.function'.", param=f"{where}.function")
            if not isinstance(fn.get("arguments"), str):
                raise InvalidRequest(
                    f"Invalid type for '{where}.function.arguments': expected a string.",
                    param=f"{where}.function.arguments",
                )
        elif call.get("type") != "custom":
            raise InvalidRequest(
                f"Invalid value: '{call.get('type')}'. Supported values are: 'function' and 'custom'.",
                param=f"{where}.type",
            )
        ids.append(call["id"])
    return ids


def _chat_content(content: Any, i: int, parts: frozenset[str], *, required: bool) -> None:
    if content is None:
        if required:
            raise InvalidRequest(
                "Invalid value for 'content': expected a string, got null.", param=f"messages.[{i}].content"
            )
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidRequest(
            f"Invalid type for 'messages[{i}].content': expected one of a string or array of objects.",
            param=f"messages[{i}].content",
        )
    for k, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in parts:
            kind = part.get("type") if isinstance(part, dict) else part
            raise InvalidRequest(
                f"Invalid value: '{kind}'. Supported values are: {_listing(parts)}.",
                param=f"messages[{i}].content[{k}].type",
            )
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise InvalidRequest(
                f"Missing required parameter: 'messages[{i}].content[{k}].text'.",
                param=f"messages[{i}].content[{k}].text",
            )


def _chat_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise InvalidRequest("Invalid type for 'tools': expected an array.", param="tools")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") not in ("function", "custom"):
            raise InvalidRequest(f"Missing required parameter: 'tools[{i}].type'.", param=f"tools[{i}].type")
        spec = tool.get(tool["type"])
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise InvalidRequest(
                f"Missing required parameter: 'tools[{i}].{tool['type']}.name'.",
                param=f"tools[{i}].{tool['type']}.name",
            )
        if not FUNCTION_NAME_RE.match(spec["name"]):
            raise InvalidRequest(
                f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that "
                "matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"tools[{i}].function.name",
            )
        if "parameters" in spec and not isinstance(spec["parameters"], dict):
            raise InvalidRequest(
                f"Invalid type for 'tools[{i}].function.parameters': expected an object.",
                param=f"tools[{i}].function.parameters",
            )
        names.add(spec["name"])
    return names


def _chat_tool_choice(choice: Any, names: set[str]) -> None:
    if choice is None or choice in ("none", "auto", "required"):
        if choice in ("auto", "required") and not names:
            raise InvalidRequest(
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
                param="tool_choice",
            )
        return
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if name not in names:
            raise InvalidRequest(
                f"Invalid value for 'tool_choice': function '{name}' not found in 'tools'.", param="tool_choice"
            )
        return
    if isinstance(choice, dict) and choice.get("type") in ("allowed_tools", "custom"):
        return
    raise InvalidRequest("Invalid value for 'tool_choice'.", param="tool_choice")


def _listing(values: frozenset[str]) -> str:
    return ", ".join(repr(v) for v in sorted(values))


# -- Responses ---------------------------------------------------------------------------------------------------
def validate_responses_request(
    body: Any, signer: Signer, previous: Callable[[str], list[dict[str, Any]] | None]
) -> None:
    """`previous(response_id)` returns the items (input + output) of a stored response, None when unknown."""
    if not isinstance(body, dict):
        raise InvalidRequest("We could not parse the JSON body of your request.")
    for key in body:
        if key not in RESPONSES_FIELDS:
            raise InvalidRequest(f"Unknown parameter: '{key}'.", param=key)
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model")
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise InvalidRequest("Invalid type for 'instructions': expected a string.", param="instructions")
    _responses_tools(body.get("tools"))
    prior: list[dict[str, Any]] = []
    prev_id = body.get("previous_response_id")
    if prev_id is not None:
        found = previous(prev_id) if isinstance(prev_id, str) else None
        if found is None:
            raise InvalidRequest(
                f"Previous response with id '{prev_id}' not found.", param="previous_response_id", status=400
            )
        prior = found
    items = body.get("input")
    if items is None:
        if prev_id is None:
            raise InvalidRequest("Missing required parameter: 'input'.", param="input")
        return
    if isinstance(items, str):
        return
    if not isinstance(items, list):
        raise InvalidRequest(
            "Invalid type for 'input': expected one of a string or array of input items.", param="input"
        )
    calls: dict[str, str] = {}  # call_id -> kind of call
    answered: set[str] = set()
    for item in prior:
        _note_call(item, calls, answered)
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise InvalidRequest(f"Invalid type for '{where}': expected an object.", param=where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in RESPONSES_ITEMS:
            raise InvalidRequest(
                f"Invalid value: '{kind}'. Supported values are: {_listing(RESPONSES_ITEMS)}.",
                param=f"{where}.type",
            )
        if kind == "message":
            _responses_message(item, where)
        elif kind in ("function_call", "custom_tool_call"):
            if not isinstance(item.get("call_id"), str) or not isinstance(item.get("name"), str):
                raise InvalidRequest(f"Missing required parameter: '{where}.call_id'.", param=f"{where}.call_id")
            field = "arguments" if kind == "function_call" else "input"
            if not isinstance(item.get(field), str):
                raise InvalidRequest(
                    f"Invalid type for '{where}.{field}': expected a string.", param=f"{where}.{field}"
                )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_kind = kind.removesuffix("_output")
            call_id = item.get("call_id")
            if (calls.get(call_id) if isinstance(call_id, str) else None) != call_kind:
                label = "function call" if kind == "function_call_output" else "custom tool call"
                raise InvalidRequest(
                    f"No tool call found for {label} output with call_id {item.get('call_id')}.", param="input"
                )
            output = item.get("output")
            if not isinstance(output, (str, list)):
                raise InvalidRequest(
                    f"Invalid type for '{where}.output': expected one of a string or array.", param=f"{where}.output"
                )
        elif kind == "reasoning":
            if not isinstance(item.get("summary"), list):
                raise InvalidRequest(f"Missing required parameter: '{where}.summary'.", param=f"{where}.summary")
            if item.get("encrypted_content") is not None and signer.unseal(item["encrypted_content"]) is None:
                raise InvalidRequest(
                    f"The encrypted content for item {item.get('id', where)} could not be verified.", param="input"
                )
        _note_call(item, calls, answered)
    missing = [c for c, kind in calls.items() if c not in answered and kind in ("function_call", "custom_tool_call")]
    if missing:
        raise InvalidRequest(f"No tool output found for function call {missing[0]}.", param="input")


def _note_call(item: dict[str, Any], calls: dict[str, str], answered: set[str]) -> None:
    kind = item.get("type")
    if kind in ("function_call", "custom_tool_call"):
        calls[item["call_id"]] = kind
    elif kind in ("function_call_output", "custom_tool_call_output"):
        answered.add(item["call_id"])


def _responses_message(item: dict[str, Any], where: str) -> None:
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        raise InvalidRequest(
            f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.",
            param=f"{where}.role",
        )
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidRequest(
            f"Invalid type for '{where}.content': expected one of a string or array.", param=f"{where}.content"
        )
    parts = RESPONSES_OUTPUT_PARTS if role == "assistant" else RESPONSES_INPUT_PARTS
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in parts:
            raise InvalidRequest(
                f"Invalid value: '{kind}'. Supported values are: {_listing(parts)}.",
                param=f"{where}.content[{k}].type",
            )
        if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            raise InvalidRequest(
                f"Missing required parameter: '{where}.content[{k}].text'.", param=f"{where}.content[{k}].text"
            )


def _responses_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise InvalidRequest("Invalid type for 'tools': expected an array.", param="tools")
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in RESPONSES_TOOLS:
            raise InvalidRequest(
                f"Invalid value: '{kind}'. Supported values are: {_listing(RESPONSES_TOOLS)}.",
                param=f"tools[{i}].type",
            )
        if kind in ("function", "custom"):
            name = tool.get("name")
            if not isinstance(name, str) or not FUNCTION_NAME_RE.match(name):
                raise InvalidRequest(
                    f"Invalid 'tools[{i}].name': string does not match pattern. Expected a string that matches "
                    "the pattern '^[a-zA-Z0-9_-]+$'.",
                    param=f"tools[{i}].name",
                )
