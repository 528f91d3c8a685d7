"""One turn of a conversation through the gateway with each API's real SDK (`anthropic`, `openai` Chat Completions
and Responses, `google-genai`), JSON or streamed, and what the client appends to its history afterwards: the tests
that hold the same multi-turn behaviour for every API (a retried request, ...) drive them through `SdkTurns`."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, cast

import anthropic
import openai
from google import genai
from google.genai import types as genai_types

from llm_upstream import UpstreamServer
from llm_upstream.validate_gemini import call_signature_text
from mcp_offload.apis.names import ApiName
from support.gateway_server import GatewayServer
from support.llm_conversations import (
    BASH_ANTHROPIC,
    BASH_CHAT,
    BASH_GEMINI,
    BASH_RESPONSES,
    anthropic_messages,
    chat_messages,
    gemini_contents,
    responses_input,
)

CACHED = {"type": "ephemeral"}
SYSTEM = "You are a careful build engineer. " + " ".join(f"Rule {i}: read the whole log first." for i in range(300))
GEMINI_MODEL = "gemini-3-flash-preview"  # a Gemini 3 model gives its calls ids (2.5 models none)
MESSAGES_KEY: dict[ApiName, str] = {
    "anthropic": "messages", "openai_chat": "messages", "responses": "input", "gemini": "contents",
}  # fmt: skip


def marked(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a breakpoint on the last block (as Claude Code and the SDK docs do)."""
    out = [copy.deepcopy(dict(m)) for m in messages]
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = CACHED
    return out


def system(blocks: int) -> list[dict[str, Any]]:
    """`blocks` system blocks, each a breakpoint (Claude Code marks its system prompt)."""
    return [{"type": "text", "text": f"{SYSTEM} (part {i})", "cache_control": CACHED} for i in range(blocks)]


class SdkTurns:
    """A client of `api` on `gateway`: `history(log)` starts the conversation (the Bash call and its large result),
    `send(history)` runs one turn and returns the messages the client appends (the model's answer)."""

    def __init__(self, api: ApiName, gateway: GatewayServer, upstream: UpstreamServer, *, stream: bool) -> None:
        self.api, self.gateway, self.upstream, self.stream = api, gateway, upstream, stream

    def history(self, log: str) -> list[Any]:
        if self.api == "anthropic":
            return list(anthropic_messages(log))
        if self.api == "openai_chat":
            return list(chat_messages(log))
        if self.api == "responses":
            return list(responses_input(log))
        contents = gemini_contents(log, call_id="c1")  # a Gemini 3 model's call, signed as the model signs it
        part = contents[1]["parts"][0]
        part["thoughtSignature"] = self.upstream.state.signer.sign(call_signature_text(part["functionCall"]))
        return contents

    def user(self, text: str) -> Any:
        if self.api == "gemini":
            return {"role": "user", "parts": [{"text": text}]}
        return {"role": "user", "content": text}

    def send(self, history: list[Any]) -> list[Any]:
        if self.api == "anthropic":
            return self._anthropic(history)
        if self.api == "openai_chat":
            return self._chat(history)
        if self.api == "responses":
            return self._responses(history)
        return self._gemini(history)

    def _anthropic(self, history: list[Any]) -> list[Any]:
        client = anthropic.Anthropic(base_url=self.gateway.base_url, api_key="sk-ant-test", max_retries=0)
        kwargs: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 256, "tools": [BASH_ANTHROPIC]}
        kwargs |= {"system": system(1), "messages": marked(history)}
        if self.stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        return [{"role": "assistant", "content": [b.model_dump() for b in message.content]}]

    def _openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gateway.openai_url, api_key="sk-test", max_retries=0)

    def _chat(self, history: list[Any]) -> list[Any]:
        kwargs: dict[str, Any] = {"model": "gpt-5", "messages": history, "tools": [BASH_CHAT]}
        if self.stream:
            with self._openai().chat.completions.stream(**kwargs) as events:
                for _ in events:
                    pass
                completion = events.get_final_completion()
        else:
            completion = self._openai().chat.completions.create(**kwargs)
        return [{"role": "assistant", "content": completion.choices[0].message.content}]

    def _responses(self, history: list[Any]) -> list[Any]:
        kwargs: dict[str, Any] = {"model": "gpt-5", "input": history, "tools": [BASH_RESPONSES], "store": False}
        if self.stream:
            with self._openai().responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = self._openai().responses.create(**kwargs)
        return [item.model_dump(exclude_none=True) for item in response.output]

    def _gemini(self, history: list[Any]) -> list[Any]:
        options = genai_types.HttpOptions(base_url=self.gateway.base_url, api_version="v1beta")
        client = genai.Client(api_key="retry-key", http_options=options)
        config = genai_types.GenerateContentConfig(tools=[genai_types.Tool.model_validate(BASH_GEMINI)])
        contents = cast(Any, history)
        if self.stream:
            chunks = list(client.models.generate_content_stream(model=GEMINI_MODEL, contents=contents, config=config))
        else:
            chunks = [client.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)]
        parts = [p for chunk in chunks if chunk.candidates and chunk.candidates[0].content
                 for p in chunk.candidates[0].content.parts or []]  # fmt: skip
        return [genai_types.Content(role="model", parts=parts)]


def last_call_id(api: ApiName, body: Mapping[str, Any]) -> str:
    """The id of the model's last tool call in a request that ends on its result (a retrieval loop's follow-up)."""
    items = body[MESSAGES_KEY[api]]
    if api == "anthropic":
        return str(items[-2]["content"][-1]["id"])
    if api == "openai_chat":
        return str(items[-2]["tool_calls"][-1]["id"])
    if api == "responses":
        return str([i for i in items if i.get("type") == "function_call"][-1]["call_id"])
    return str(items[-2]["parts"][-1]["functionCall"]["id"])
