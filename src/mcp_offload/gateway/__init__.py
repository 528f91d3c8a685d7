"""The LLM gateway: a reverse proxy for the LLM APIs of `mcp_offload.apis` (Anthropic Messages, OpenAI Chat
Completions and Responses) that keeps an agent's history small by storing large tool results and replacing them
with references, cache-safely.

`app.py` serves the APIs (each API's routes, upstream and error document from `mcp_offload.apis`) and rewrites each
request through the cache-safe core (`cachesafe/request_rewrite.py`, shared with the LiteLLM guardrail), `loop.py`
runs the transparent retrieval loop over each API's dialect, answering the retrieval calls with
`cachesafe/retrieval.py` (`session_retriever.py` binds it to a request), `accounting.py` and
`status.py` keep and show the figures, `compress_api.py` serves the context-compression service contract.
"""
