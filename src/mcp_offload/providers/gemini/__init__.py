"""The Gemini API's own endpoint (`https://generativelanguage.googleapis.com`): which paths are its calls
(`routes.py`), at Google's implicit-caching prices (`provider.py`)."""

from mcp_offload.providers.gemini.provider import GeminiProvider

__all__ = ["GeminiProvider"]
