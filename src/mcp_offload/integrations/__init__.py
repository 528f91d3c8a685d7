"""Front ends that run inside other people's processes: `litellm` (a LiteLLM proxy guardrail). They may import the
gateway, compact and below; nothing in mcp-offload imports them (each needs its host's package: an optional extra)."""
