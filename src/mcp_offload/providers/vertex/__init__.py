"""Google Vertex AI: Gemini and Claude under a project's resource paths, the OAuth bearer passed through, the
location's endpoint, Vertex's prices (`provider.py`)."""

from mcp_offload.providers.vertex.provider import VertexProvider

__all__ = ["VertexProvider"]
