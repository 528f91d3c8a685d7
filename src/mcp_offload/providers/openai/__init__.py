"""OpenAI's own endpoint (`https://api.openai.com/v1`): Chat Completions and Responses, at OpenAI's cache prices;
also where a request no provider claims is relayed (OpenAI-compatible servers share its paths)."""

from mcp_offload.providers.openai.provider import OpenAIProvider

__all__ = ["OpenAIProvider"]
