"""Front ends that plug mcp-offload into what agents already run: agent frameworks (openai_agents.py,
pydantic_ai.py, langchain.py) and LLM gateways. Each module imports its framework lazily: only when it is imported.
"""
