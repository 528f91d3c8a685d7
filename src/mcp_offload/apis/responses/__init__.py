"""OpenAI Responses: the input items (`messages.py`), the request body (`history.py`), answers and streams in the
retrieval loop (`dialect.py`); `api.py` puts them behind the `LlmApi` protocol (the error document is OpenAI's
shared one, `apis/openai_error.py`; its stream form is an `error` event)."""

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.responses.api import ResponsesApi

RESPONSES: LlmApi = ResponsesApi()

__all__ = ["RESPONSES", "ResponsesApi"]
