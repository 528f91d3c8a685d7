"""OpenAI Chat Completions: the message format (`messages.py`), the request body (`history.py`), answers and
streams in the retrieval loop (`dialect.py`); `api.py` puts them behind the `LlmApi` protocol (the error document is
OpenAI's shared one, `apis/openai_error.py`)."""

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.openai_chat.api import OpenAIChatApi

OPENAI_CHAT: LlmApi = OpenAIChatApi()

__all__ = ["OPENAI_CHAT", "OpenAIChatApi"]
