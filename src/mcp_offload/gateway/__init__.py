"""The LLM gateway: a reverse proxy for the LLM APIs of `mcp_offload.apis` (Anthropic Messages, OpenAI Chat
Completions and Responses) that keeps an agent's history small by storing large tool results and replacing them
with references, cache-safely.

`app.py` serves the APIs (each API's paths, upstream and error document from `mcp_offload.apis`), `rewrite.py`
rewrites one request through the cache-safe core (`mcp_offload.cachesafe`), `loop.py` runs the transparent
retrieval loop over each API's dialect, `retrieval.py` answers the retrieval calls, `accounting.py` and
`status.py` keep and show the figures, `compress_api.py` serves the context-compression service contract.
"""
