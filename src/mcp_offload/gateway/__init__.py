"""The LLM gateway: a reverse proxy for the LLM APIs of `mcp_offload.apis` (Anthropic Messages, OpenAI Chat
Completions and Responses, Gemini) that keeps an agent's history small by storing large tool results and replacing
them with references, cache-safely.

`app.py` is the route table, on the HTTP base it shares with the MCP HTTP service (`web/`; `access.py` says who may
use the gateway and how a refusal reads); `endpoint.py` runs one request: an API call, one `Turn` (turn.py) in three
steps, `plan.py` (which rewrites the request through the cache-safe core, `cachesafe/request_rewrite.py`, shared
with the LiteLLM guardrail), `send.py` and `answer.py`; or a relay (`relay.py`). `loop.py` runs the transparent
retrieval loop over each API's dialect, answering the retrieval calls with `cachesafe/retrieval.py`
(`session_retriever.py` binds it to a request), `accounting.py` and `status.py` keep and show the figures,
`compress_api.py` serves the context-compression service contract.
"""
