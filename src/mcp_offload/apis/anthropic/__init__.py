"""Anthropic Messages: the message format (`messages.py`), the request body (`history.py`), answers and streams
in the retrieval loop (`stream.py`, with the follow-up's cache breakpoint: `breakpoint.py`), cache breakpoints for
a client that sets none (`client_breakpoints.py`), the error document (`errors.py`); `api.py` puts them behind the
`LlmApi` protocol."""

from mcp_offload.apis.anthropic.api import AnthropicApi

__all__ = ["AnthropicApi"]
