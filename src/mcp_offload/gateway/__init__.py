"""The LLM gateway: a reverse proxy for the Anthropic Messages, OpenAI Chat Completions and Responses APIs that keeps
an agent's history small by storing large tool results and replacing them with references, cache-safely.

The cache-safe core (pure request rewriting over a sticky per-session decision record) is `rewrite.py`, built on
`history/` (each API's request shape), `session.py` (which conversation a request belongs to), `record/` (the
decisions, expansions and counters in the store), `cost.py` (provider cache prices and the cost rule),
`tool_text.py` (the injected retrieval tools), `retrieval.py` (running them) and `accounting.py`.
"""
