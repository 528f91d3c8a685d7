"""One package per LLM API (`anthropic/`, `openai_chat/`, `responses/`, `gemini/`, `converse/`), each behind the
`LlmApi` protocol (`base.py`) and listed once in `registry.py`; `ApiName` (`names.py`) is the one word for "which
API".

Shared by every API, never naming one: the message model (`message.py`), the request-body base (`history.py`),
the retrieval loop's protocol (`dialect.py`), the answers most APIs share (`defaults.py`), SSE framing
(`sse.py`), usage objects (`usage.py`), the base of the block-numbered stream splicers (`block_splicer.py`), and which
API a message list is in (`detect.py`). No API package imports
another (an import-linter contract).
"""
