"""Validate Gemini `generateContent` requests the way the API does (InvalidRequest with its wording, 400
INVALID_ARGUMENT).

Unknown fields (proto JSON: lowerCamel or snake_case names), `contents` present and non-empty, roles, every part
holding exactly one kind of data, `functionCall` parts only in model contents and `functionResponse` parts (name,
object response) only in user contents, a function call turn answered by as many function responses, function
declarations (names, duplicates, `parameters` xor `parametersJsonSchema`), `toolConfig` modes, and thought
signatures: a `thoughtSignature` must be one this upstream issued for that very part (any change is "corrupted"),
and Gemini 3 models refuse a function call of the current turn without its signature.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from llm_upstream.errors import InvalidRequest
from llm_upstream.signing import Signer

FIELDS = frozenset(
    {"contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig", "cachedContent",
     "labels", "model"}
)  # fmt: skip
DATA_KEYS = frozenset(
    {"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}
)
PART_EXTRAS = frozenset({"thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution"})
NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$")
MODES = frozenset({"AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"})


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def call_signature_text(call: dict[str, Any]) -> str:
    """What a function call's thought signature signs: its name and arguments."""
    return "fc:" + str(call.get("name")) + json.dumps(call.get("args", {}), sort_keys=True, ensure_ascii=False)


def as_standard_base64(value: Any) -> Any:
    """A `bytes` field as proto JSON reads it: standard or URL-safe base64, padded or not (the google-genai SDK sends
    pydantic's URL-safe form); re-encoded standard, as this upstream signs. Anything unreadable is left as is."""
    if not isinstance(value, str):
        return value
    try:
        raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    except ValueError:
        return value
    return base64.b64encode(raw).decode("ascii")


def _bad(message: str) -> InvalidRequest:
    return InvalidRequest(message)


def validate_gemini_request(body: Any, model: str, signer: Signer) -> None:
    if not isinstance(body, dict):
        raise _bad("Invalid JSON payload received. Expected an object.")
    for key in body:
        if camel(key) not in FIELDS:
            raise _bad(f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.')
    get = {camel(k): v for k, v in body.items()}
    contents = get.get("contents")
    if not isinstance(contents, list) or not contents:
        raise _bad("* GenerateContentRequest.contents: contents is not specified\n")
    names = _tools(get.get("tools"))
    config = (get.get("toolConfig") or {}).get("functionCallingConfig") or {}
    if config.get("mode", "AUTO") not in MODES:
        raise _bad(f"Invalid value at 'tool_config.function_calling_config.mode' ({config.get('mode')})")
    system = get.get("systemInstruction")
    if system is not None:
        _parts(system, "system_instruction", roles=("user", "system", None))
    last_user_text = -1
    for i, content in enumerate(contents):
        parts = _parts(content, f"contents[{i}]", roles=("user", "model", "function", None))
        if content.get("role", "user") != "model" and any("text" in p for p in parts):
            last_user_text = i
    for i, content in enumerate(contents):
        role = content.get("role", "user")
        calls = [p for p in content["parts"] if "functionCall" in p]
        answers = [p for p in content["parts"] if "functionResponse" in p]
        if calls and role != "model":
            raise _bad(f"* GenerateContentRequest.contents[{i}]: functionCall parts must be in a model turn.\n")
        if answers and role == "model":
            raise _bad(f"* GenerateContentRequest.contents[{i}]: functionResponse parts must be in a user turn.\n")
        for k, part in enumerate(calls):
            _call(part, i, k, names, signer, model, current=i > last_user_text)
        for part in answers:
            answer = part["functionResponse"]
            if not isinstance(answer.get("name"), str) or not answer["name"]:
                raise _bad(f"* GenerateContentRequest.contents[{i}].parts: function_response.name: Name is required.")
            if not isinstance(answer.get("response"), dict):
                raise _bad(
                    f"Invalid JSON payload received. contents[{i}].function_response.response: Expected an object."
                )
        if calls:
            following = contents[i + 1] if i + 1 < len(contents) else None
            answered = [p for p in (following or {}).get("parts", []) if "functionResponse" in p] if following else []
            if following is not None and len(answered) != len(calls):
                raise _bad(
                    "Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn."
                )
            previous = contents[i - 1] if i else None
            if previous is None or previous.get("role", "user") == "model":
                raise _bad(
                    "Please ensure that function call turn comes immediately after a user turn or after a function "
                    "response turn."
                )


def _parts(content: Any, where: str, roles: tuple[str | None, ...]) -> list[dict[str, Any]]:
    if not isinstance(content, dict):
        raise _bad(f"Invalid JSON payload received. {where}: Expected an object.")
    if content.get("role") not in roles:
        raise _bad(f"* GenerateContentRequest.{where}.role: Please use a valid role: user, model.\n")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _bad(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.\n")
    for k, part in enumerate(parts):
        if not isinstance(part, dict):
            raise _bad(f"Invalid JSON payload received. {where}.parts[{k}]: Expected an object.")
        for key in part:
            if camel(key) not in DATA_KEYS | PART_EXTRAS:
                raise _bad(f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}.parts[{k}]'.")
        data = [camel(key) for key in part if camel(key) in DATA_KEYS]
        if len(data) != 1:
            raise _bad(
                f"* GenerateContentRequest.{where}.parts[{k}].data: required oneof field 'data' must have one "
                "initialized field\n"
            )
    return parts


def _call(part: dict[str, Any], i: int, k: int, names: set[str], signer: Signer, model: str, *, current: bool) -> None:
    call = part["functionCall"]
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise _bad(f"* GenerateContentRequest.contents[{i}].parts[{k}].function_call.name: Name is required.")
    signature = part.get("thoughtSignature")
    if signature is not None and not signer.verify(call_signature_text(call), as_standard_base64(signature)):
        raise _bad("Corrupted thought signature.")
    if signature is None and current and k == 0 and model.startswith("gemini-3"):
        raise _bad(
            f"Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
            f"correctly, and missing thought_signature may lead to degraded model performance. Additional data, "
            f"function call `default_api:{call['name']}` , position {i + 1}. Please refer to "
            "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
        )


def _tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise _bad("Invalid JSON payload received. tools: Expected a list.")
    names: set[str] = set()
    for t, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _bad(f"Invalid JSON payload received. tools[{t}]: Expected an object.")
        declarations = tool.get("functionDeclarations", tool.get("function_declarations"))
        for d, declaration in enumerate(declarations or []):
            name = declaration.get("name") if isinstance(declaration, dict) else None
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise _bad(
                    f"* GenerateContentRequest.tools[{t}].function_declarations[{d}].name: Invalid function name. "
                    "Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), "
                    "dots (.), colons (:) or dashes (-), with a maximum length of 128.\n"
                )
            if name in names:
                raise _bad(f"Duplicate function declaration found: {name}")
            if "parameters" in declaration and "parametersJsonSchema" in declaration:
                raise _bad(
                    f"* GenerateContentRequest.tools[{t}].function_declarations[{d}]: parameters and "
                    "parameters_json_schema cannot both be set.\n"
                )
            names.add(name)
    return names
