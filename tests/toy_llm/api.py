"""The Toy Chat API as one `LlmApi`: what a fifth API's package holds. Its messages are Chat Completions' (it takes
Chat's message format and answer dialect), but its request envelope, tool shape, error document and client variables
are its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from mcp_offload.apis.base import LlmApi, ToolDeclaration
from mcp_offload.apis.dialect import Dialect, Round
from mcp_offload.apis.history import History, normalized
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.openai_chat.dialect import ChatDialect
from mcp_offload.apis.openai_chat.history import OpenAIChatHistory

KEY = "conversation"  # where a Toy Chat request holds its messages


class ToyHistory(OpenAIChatHistory):
    api = "toy"
    messages_key = KEY

    def tool_name(self, tool: Mapping[str, Any]) -> str | None:
        name = tool.get("tool")
        return name if isinstance(name, str) else None

    def opening(self, body: Mapping[str, Any]) -> Any:
        messages = body.get(KEY)
        return [normalized(m) for m in messages[:2]] if isinstance(messages, list) else None


class ToyDialect(ChatDialect):
    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        chat = {("messages" if k == KEY else k): v for k, v in request.items()}
        return {(KEY if k == "messages" else k): v for k, v in super().follow_up(chat, rounds, final=final).items()}


class ToyApi:
    name = "toy"
    aliases: tuple[str, ...] = ("toy-chat",)
    title = "Toy Chat"
    relays_unreadable = False
    overloaded_status = 503
    litellm_call_types: tuple[str, ...] = ()
    answer_field = "toy_answer"

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.history = ToyHistory()
        self.messages = self.history.format
        self.dialect = ToyDialect()

    def single_choice(self, request: dict[str, Any]) -> bool:
        return True

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def tool_definitions(self, tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
        return [{"tool": t.name, "about": t.description, "schema": t.input_schema} for t in tools]

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return {"toy_error": {"status": status, "code": code, "message": message}}

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return b"data: " + orjson.dumps(self.error_document(500, code, message)) + b"\n\n"

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"TOY_BASE_URL": gateway + "/toy"}


TOY: LlmApi = ToyApi()
