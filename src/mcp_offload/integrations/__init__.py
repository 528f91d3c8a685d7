"""Front ends that plug mcp-offload into what agents already run: agent frameworks (`openai_agents`,
`pydantic_ai`, `langchain`) and the LiteLLM proxy (`litellm`, a guardrail). They may import the gateway, compact and
below; nothing in mcp-offload imports them. Each needs its host's package (an optional extra) and imports it lazily,
only when its module is imported.
"""
