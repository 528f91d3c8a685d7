"""Anthropic Messages: the message format (`messages.py`), the request body (`history.py`), answers and streams
in the retrieval loop (`dialect.py`, with the follow-up's cache breakpoint: `breakpoint.py`), cache breakpoints for
a client that sets none (`client_breakpoints.py`), the error document (`errors.py`); `api.py` puts them behind the
`LlmApi` protocol. Served by the providers that answer it (`mcp_offload.providers`)."""

from mcp_offload.apis.anthropic.api import AnthropicApi
from mcp_offload.apis.base import LlmApi

ANTHROPIC_MESSAGES: LlmApi = AnthropicApi()

__all__ = ["ANTHROPIC_MESSAGES", "AnthropicApi"]
