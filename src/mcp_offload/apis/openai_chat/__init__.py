"""OpenAI Chat Completions: the message format (`messages.py`), the request body (`history.py`), answers and
streams in the retrieval loop (`stream.py`); `api.py` puts them behind the `LlmApi` protocol (the error document is
OpenAI's shared one, `apis/openai_error.py`)."""

from mcp_offload.apis.openai_chat.api import OpenAIChatApi

__all__ = ["OpenAIChatApi"]
