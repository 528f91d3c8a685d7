"""One package per LLM API the gateway speaks (message format, request shape, stream dialect, injected tool
definitions, error document)."""
