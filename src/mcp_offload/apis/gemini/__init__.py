"""The Gemini API (`generateContent` / `streamGenerateContent`): which paths are its own and what they say
(`routes.py`), the `contents` format (`messages.py`), the request body (`history.py`), the tools as
`functionDeclarations` (`tools.py`), answers and streams in the retrieval loop (`stream.py`), the error document
(`errors.py`); `api.py` puts them behind the `LlmApi` protocol."""

from mcp_offload.apis.gemini.api import GeminiApi

__all__ = ["GeminiApi"]
