"""Anthropic's own endpoint (`https://api.anthropic.com`): the Messages API, at Anthropic's cache prices."""

from mcp_offload.providers.anthropic.provider import AnthropicProvider

__all__ = ["AnthropicProvider"]
