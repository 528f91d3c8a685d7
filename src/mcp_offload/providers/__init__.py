"""One package per provider: where an LLM API's requests are answered (`anthropic/`, `openai/`, `gemini/`: the
vendors' own endpoints), each behind the `Provider` protocol (`base.py`) and listed once in `registry.py`.

Shared, never naming a provider: the protocol (`base.py`), prompt-cache prices (`prices.py`), how a stream is framed
(`framing.py`), and what the vendors' endpoints share (`vendor.py`). A provider names the APIs it serves (`apis/`);
no API imports a provider, and no provider's package imports another's (import-linter contracts).
"""
