"""The Gemini API (`generateContent` / `streamGenerateContent`): the `contents` format (`messages.py`), the request
body (`history.py`), the tools as `functionDeclarations` (`tools.py`), answers and streams in the retrieval loop
(`dialect.py`), the error document (`errors.py`); `api.py` puts them behind the `LlmApi` protocol. Which paths are
its calls is its providers' (`mcp_offload.providers.gemini.routes` for the Gemini API's own endpoint)."""

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.gemini.api import GeminiApi

GEMINI: LlmApi = GeminiApi()

__all__ = ["GEMINI", "GeminiApi"]
