"""Every LLM API mcp-offload speaks, one line each (`APIS`), and the one place a caller's word for an API becomes
the `LlmApi` (`api_named`: its name or one of its `aliases`, any case; anything else is `UnknownApi`, one message
listing the accepted names, the same from every entry point).

Adding an API: its package under `apis/` and its line here, or, from outside this package (a plug-in, a test),
`register_api(MyApi())`. The order is the order detection settles a tie in after Chat Completions.
"""

from __future__ import annotations

from mcp_offload.apis.anthropic import ANTHROPIC_MESSAGES
from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.converse import CONVERSE
from mcp_offload.apis.gemini import GEMINI
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.openai_chat import OPENAI_CHAT
from mcp_offload.apis.responses import RESPONSES

APIS: dict[ApiName, LlmApi] = {api.name: api for api in (ANTHROPIC_MESSAGES, OPENAI_CHAT, RESPONSES, GEMINI, CONVERSE)}


class UnknownApi(ValueError):
    """A word that names no registered LLM API; the message lists the accepted ones."""


def accepted_names() -> str:
    """The accepted words, each API's name with its aliases: "anthropic, openai_chat (openai, chat, …), …"."""
    return ", ".join(f"{api.name} ({', '.join(api.aliases)})" if api.aliases else api.name for api in APIS.values())


def _words() -> dict[str, LlmApi]:
    return {word.lower(): api for api in APIS.values() for word in (api.name, *api.aliases)}


def api_named(word: str) -> LlmApi:
    """The API `word` names (its name or an alias, any case); `UnknownApi` otherwise."""
    api = _words().get(word.lower()) if isinstance(word, str) else None
    if api is None:
        shown = word[:60] if isinstance(word, str) else type(word).__name__
        raise UnknownApi(f"unknown LLM API {shown!r}: use one of {accepted_names()}")
    return api


def register_api(api: LlmApi) -> None:
    """Add `api` to every front end (the gateway through the providers that serve it, the `Compactor`, the
    compression service, the LiteLLM guardrail, detection). Its name and aliases must be new."""
    taken = _words()
    clash = [word for word in (api.name, *api.aliases) if word.lower() in taken]
    if clash:
        raise ValueError(f"cannot register API {api.name!r}: {', '.join(clash)} already name an API")
    APIS[api.name] = api


def unregister_api(api: LlmApi) -> None:
    """Take a registered API out again (tests)."""
    if APIS.get(api.name) is api:
        del APIS[api.name]
