"""A scripted LLM API on loopback for tests and benchmarks: Anthropic Messages, OpenAI Chat Completions and
Responses, streaming and not, validating each request as the real APIs do and simulating their prompt caches.

    from llm_upstream import UpstreamServer, reply, tool_call
    with UpstreamServer([reply("hi"), reply(tool_call("Bash", {"command": "ls"}))]) as upstream:
        client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k")
        ...
        upstream.received("anthropic")[-1].usage.cache_read

Tests get a started one from the `llm_upstream` fixture (plugin.py); bench/ imports it with tests/ on sys.path.
"""

from llm_upstream.cache import CacheUsage, PromptCache, SessionStats
from llm_upstream.errors import ApiError, ApiKind, InvalidRequest
from llm_upstream.prompt import extends, prompt_digests
from llm_upstream.script import (
    AgentScript,
    Reply,
    Script,
    Step,
    Text,
    Thinking,
    ToolCall,
    ToolExchange,
    Turn,
    reply,
    tool_call,
)
from llm_upstream.server import UpstreamServer
from llm_upstream.state import ReceivedRequest, session_key

__all__ = [
    "AgentScript", "ApiError", "ApiKind", "CacheUsage", "InvalidRequest", "PromptCache", "ReceivedRequest", "Reply",
    "Script", "SessionStats", "Step", "Text", "Thinking", "ToolCall", "ToolExchange", "Turn", "UpstreamServer",
    "extends", "prompt_digests",
    "reply", "session_key", "tool_call",
]  # fmt: skip
