"""The transports: how a built MCP server is served to clients, over stdio (`stdio.py`) or HTTP (`http/`).

Both take a server built by `mcp_offload.mcp_server.offload_server` and carry its messages; neither knows the tools.
"""
