"""mcp-offload: keep large tool outputs out of the context window, losslessly."""

__version__ = "0.1.0"
