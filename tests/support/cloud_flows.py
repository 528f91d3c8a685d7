"""An agent's conversation through each cloud with the cloud's real SDK: a `Flow` keeps the history in the SDK's own
shapes, sends it (`turn`: one SDK call, JSON or streamed; the answer appended as the client appends it) and appends
the tool results (`answer`). One flow per SDK and operation:

    bedrock-converse         boto3 bedrock-runtime `converse`
    bedrock-converse-stream  boto3 `converse_stream`
    bedrock-invoke-stream    boto3 `invoke_model_with_response_stream` (the Messages body, its events in chunks)
    bedrock-anthropic        `anthropic.AnthropicBedrock` (messages.stream)
    vertex-anthropic         `anthropic.AnthropicVertex` (messages.create)
    vertex-gemini            `google-genai` with `vertexai=True` (generate_content_stream)
    azure-chat               `openai.AzureOpenAI` chat.completions
    azure-responses          `openai.AzureOpenAI` responses

The Claude flows mark their prompt for caching as Claude clients do (the system prompt and the conversation's end:
Bedrock and Vertex cache Claude only at markers); Gemini and OpenAI cache implicitly.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import boto3
import openai
from botocore.config import Config
from google import genai
from google.genai import types as genai_types
from google.oauth2.credentials import Credentials as GoogleCredentials

from llm_upstream.errors import ApiKind
from support.llm_conversations import BASH_ANTHROPIC, BASH_CHAT, BASH_GEMINI, BASH_RESPONSES

SYSTEM = "You are a careful build engineer. " + " ".join(f"Rule {i}: read the whole log first." for i in range(300))
CLAUDE_BEDROCK = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CLAUDE_VERTEX = "claude-sonnet-4-5@20250929"
GEMINI_MODEL = "gemini-3-flash-preview"  # a Gemini 3 model gives its calls ids (2.5 models none)
AWS_KEY = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
VERTEX_TOKEN = "ya29.vertex-test-token"
AZURE_KEY = "azure-test-key"
BASH_CONVERSE = {"toolSpec": {"name": "Bash", "description": "Run a shell command",
                              "inputSchema": {"json": BASH_ANTHROPIC["input_schema"]}}}  # fmt: skip
CACHED = {"type": "ephemeral"}


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Flow:
    """One cloud SDK's side of a conversation (see the module docstring)."""

    name: str
    api: ApiKind  # the scripted upstream's word for the API it speaks
    cloud: str
    messages: list[Any] = field(default_factory=list)
    system: str = SYSTEM
    _send: Callable[[Flow, str], tuple[str, list[Call]]] | None = None

    def user(self, text: str) -> None:
        self.messages.append(_USER[self.name](text))

    def turn(self, base_url: str) -> tuple[str, list[Call]]:
        """Send the history to `base_url` (the gateway's, or the upstream's when going direct): the answer's text and
        its tool calls (the answer is appended to the history)."""
        assert self._send is not None
        return self._send(self, base_url)

    def answer(self, calls: list[Call], outputs: list[str]) -> None:
        self.messages.append(_RESULTS[self.name](calls, outputs))


# -- Bedrock (boto3 and AnthropicBedrock) ----------------------------------------------------------------------------
def _boto3(base_url: str) -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=base_url,
                        aws_access_key_id=AWS_KEY[0], aws_secret_access_key=AWS_KEY[1],
                        config=Config(retries={"max_attempts": 0}, read_timeout=120))  # fmt: skip


def _converse_marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    out[-1]["content"].append({"cachePoint": {"type": "default"}})  # the end of the conversation, moved every turn
    return out


def _converse_kwargs(flow: Flow) -> dict[str, Any]:
    system = [{"text": flow.system}, {"cachePoint": {"type": "default"}}]
    return {"modelId": CLAUDE_BEDROCK, "messages": _converse_marked(flow.messages), "system": system,
            "toolConfig": {"tools": [BASH_CONVERSE]}}  # fmt: skip


def _converse_calls(blocks: list[dict[str, Any]]) -> list[Call]:
    return [
        Call(b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"]) for b in blocks if "toolUse" in b
    ]


def _converse(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    response = _boto3(base_url).converse(**_converse_kwargs(flow))
    blocks = response["output"]["message"]["content"]
    flow.messages.append({"role": "assistant", "content": blocks})
    return "".join(b.get("text", "") for b in blocks), _converse_calls(blocks)


def _converse_stream(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    response = _boto3(base_url).converse_stream(**_converse_kwargs(flow))
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for event in response["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**start["start"]["toolUse"], "input": {}}}
        elif "contentBlockDelta" in event:
            index, delta = event["contentBlockDelta"]["contentBlockIndex"], event["contentBlockDelta"]["delta"]
            block = blocks.setdefault(index, {})
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                inputs[index] = inputs.get(index, "") + delta["toolUse"]["input"]
    for index, raw in inputs.items():
        blocks[index]["toolUse"]["input"] = json.loads(raw) if raw else {}
    content = [blocks[i] for i in sorted(blocks)]
    flow.messages.append({"role": "assistant", "content": content})
    return "".join(b.get("text", "") for b in content), _converse_calls(content)


def _claude_marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = CACHED
    return out


def _claude_body(flow: Flow) -> dict[str, Any]:
    return {"max_tokens": 512, "system": [{"type": "text", "text": flow.system, "cache_control": CACHED}],
            "messages": _claude_marked(flow.messages), "tools": [BASH_ANTHROPIC]}  # fmt: skip


def _claude_calls(blocks: list[dict[str, Any]]) -> list[Call]:
    return [Call(b["id"], b["name"], b["input"]) for b in blocks if b.get("type") == "tool_use"]


def _claude_append(flow: Flow, blocks: list[dict[str, Any]]) -> tuple[str, list[Call]]:
    flow.messages.append({"role": "assistant", "content": blocks})
    return "".join(b.get("text", "") for b in blocks if b.get("type") == "text"), _claude_calls(blocks)


def _invoke_stream(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    body = {"anthropic_version": "bedrock-2023-05-31", **_claude_body(flow)}
    response = _boto3(base_url).invoke_model_with_response_stream(modelId=CLAUDE_BEDROCK, body=json.dumps(body))
    blocks: list[dict[str, Any]] = []
    partial = ""
    for event in response["body"]:
        data = json.loads(event["chunk"]["bytes"])
        if data["type"] == "content_block_start":
            blocks.append(dict(data["content_block"]))
            partial = ""
        elif data["type"] == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[-1]["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial += delta["partial_json"]
        elif data["type"] == "content_block_stop" and blocks[-1]["type"] == "tool_use":
            blocks[-1]["input"] = json.loads(partial) if partial else {}
    return _claude_append(flow, blocks)


def _anthropic_bedrock(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    client = anthropic.AnthropicBedrock(aws_access_key=AWS_KEY[0], aws_secret_key=AWS_KEY[1], aws_region="us-east-1",
                                        base_url=base_url, max_retries=0)  # fmt: skip
    with client.messages.stream(model=CLAUDE_BEDROCK, **_claude_body(flow)) as events:
        message = events.get_final_message()
    return _claude_append(flow, [b.model_dump(exclude_none=True) for b in message.content])


def _anthropic_vertex(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    client = anthropic.AnthropicVertex(region="us-east5", project_id="test-project", access_token=VERTEX_TOKEN,
                                       base_url=base_url + "/v1", max_retries=0)  # fmt: skip
    message = client.messages.create(model=CLAUDE_VERTEX, **_claude_body(flow))
    return _claude_append(flow, [b.model_dump(exclude_none=True) for b in message.content])


# -- Vertex Gemini ---------------------------------------------------------------------------------------------------
def _vertex_gemini(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    client = genai.Client(vertexai=True, project="test-project", location="us-central1",
                          credentials=GoogleCredentials(token=VERTEX_TOKEN),  # type: ignore[no-untyped-call]
                          http_options=genai_types.HttpOptions(base_url=base_url))  # fmt: skip
    config = genai_types.GenerateContentConfig(
        system_instruction=flow.system, tools=[genai_types.Tool.model_validate(BASH_GEMINI)]
    )
    chunks = list(client.models.generate_content_stream(model=GEMINI_MODEL, contents=flow.messages, config=config))
    parts = [p for c in chunks if c.candidates and c.candidates[0].content for p in c.candidates[0].content.parts or []]
    flow.messages.append({"role": "model", "parts": [p.model_dump(mode="json", exclude_none=True) for p in parts]})
    calls = [Call(p.function_call.id or p.function_call.name or "", p.function_call.name or "",
                  dict(p.function_call.args or {})) for p in parts if p.function_call]  # fmt: skip
    return "".join(p.text or "" for p in parts if not p.thought), calls


# -- Azure OpenAI ----------------------------------------------------------------------------------------------------
def _azure(base_url: str) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(azure_endpoint=base_url, api_key=AZURE_KEY, api_version="2025-04-01-preview",
                              max_retries=0)  # fmt: skip


def _azure_chat(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    completion = _azure(base_url).chat.completions.create(
        model="gpt-4o", messages=[{"role": "system", "content": flow.system}, *flow.messages], tools=[BASH_CHAT]
    )
    message = completion.choices[0].message
    flow.messages.append(message.model_dump(exclude_none=True))
    calls = [Call(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []
             if c.type == "function"]  # fmt: skip
    return message.content or "", calls


def _azure_responses(flow: Flow, base_url: str) -> tuple[str, list[Call]]:
    response = _azure(base_url).responses.create(
        model="prod-gpt5", instructions=flow.system, input=flow.messages, tools=[BASH_RESPONSES], store=False
    )
    items = [item.model_dump(exclude_none=True) for item in response.output]
    flow.messages.extend(items)
    calls = [Call(i["call_id"], i["name"], json.loads(i["arguments"])) for i in items if i["type"] == "function_call"]
    return response.output_text, calls


_CONVERSE_FLOWS = ("bedrock-converse", "bedrock-converse-stream")
_CONTENT_FLOWS = ("bedrock-invoke-stream", "bedrock-anthropic", "vertex-anthropic", "azure-chat", "azure-responses")
_USER: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(_CONVERSE_FLOWS, lambda t: {"role": "user", "content": [{"text": t}]}),
    **dict.fromkeys(_CONTENT_FLOWS, lambda t: {"role": "user", "content": t}),
    "vertex-gemini": lambda t: {"role": "user", "parts": [{"text": t}]},
}


def _converse_results(calls: list[Call], outputs: list[str]) -> Any:
    return {"role": "user", "content": [{"toolResult": {"toolUseId": c.id, "content": [{"text": o}]}}
                                        for c, o in zip(calls, outputs, strict=True)]}  # fmt: skip


def _claude_results(calls: list[Call], outputs: list[str]) -> Any:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": o}
                                        for c, o in zip(calls, outputs, strict=True)]}  # fmt: skip


def _gemini_results(calls: list[Call], outputs: list[str]) -> Any:
    return {"role": "user", "parts": [{"functionResponse": {"id": c.id, "name": c.name, "response": {"output": o}}}
                                      for c, o in zip(calls, outputs, strict=True)]}  # fmt: skip


_RESULTS: dict[str, Callable[[list[Call], list[str]], Any]] = {
    "bedrock-converse": _converse_results,
    "bedrock-converse-stream": _converse_results,
    "bedrock-invoke-stream": _claude_results,
    "bedrock-anthropic": _claude_results,
    "vertex-anthropic": _claude_results,
    "vertex-gemini": _gemini_results,
}


def flow(name: str, system: str = SYSTEM) -> Flow:
    """A new conversation of the flow called `name` (see the module docstring)."""
    senders: dict[str, tuple[ApiKind, str, Callable[[Flow, str], tuple[str, list[Call]]]]] = {
        "bedrock-converse": ("converse", "bedrock", _converse),
        "bedrock-converse-stream": ("converse", "bedrock", _converse_stream),
        "bedrock-invoke-stream": ("anthropic", "bedrock", _invoke_stream),
        "bedrock-anthropic": ("anthropic", "bedrock", _anthropic_bedrock),
        "vertex-anthropic": ("anthropic", "vertex", _anthropic_vertex),
        "vertex-gemini": ("gemini", "vertex", _vertex_gemini),
        "azure-chat": ("openai_chat", "azure", _azure_chat),
        "azure-responses": ("responses", "azure", _azure_responses),
    }
    api, cloud, send = senders[name]
    kind = _OpenAIFlow if cloud == "azure" else Flow
    return kind(name, api, cloud, system=system, _send=send)


class _OpenAIFlow(Flow):
    def answer(self, calls: list[Call], outputs: list[str]) -> None:
        for call, output in zip(calls, outputs, strict=True):
            if self.name == "azure-chat":
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
            else:
                self.messages.append({"type": "function_call_output", "call_id": call.id, "output": output})


FLOWS = ("bedrock-converse", "bedrock-converse-stream", "bedrock-invoke-stream", "bedrock-anthropic",
         "vertex-anthropic", "vertex-gemini", "azure-chat", "azure-responses")  # fmt: skip


def tool_result_texts(api: ApiKind, body: dict[str, Any]) -> list[str]:
    """The tool results' texts of a request as the upstream received it (what the gateway sent)."""
    found: list[str] = []
    if api == "converse":
        for message in body.get("messages") or []:
            for block in message.get("content") or []:
                for part in (block.get("toolResult") or {}).get("content") or []:
                    found.append(part.get("text", json.dumps(part.get("json"))))
    elif api == "anthropic":
        for message in body.get("messages") or []:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    found.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    elif api == "gemini":
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if "functionResponse" in part:
                    found.append(str(part["functionResponse"]["response"].get("output")))
    elif api == "openai_chat":
        found = [str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]
    else:
        found = [str(i.get("output")) for i in body.get("input") or [] if i.get("type") == "function_call_output"]
    return found
