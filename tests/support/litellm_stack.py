"""pytest plugin: what the LiteLLM proxy tests run behind the proxy, one set per test module.

- `litellm_upstream`: the scripted, validating, cache-simulating LLM API (tests/llm_upstream) the proxy forwards to;
- `start_redis()`: a fresh Redis server (for the stores behind the proxy), every one stopped after the module;
  skips loudly when `redis-server` is not installed (.ci/redis.sh installs it);
- `scripted_models(upstream)`: the `model_list` of a config.yaml naming that upstream as an OpenAI deployment
  (`MODEL`) and an Anthropic one (`CLAUDE`).

Each test module builds its own config.yaml (its guardrails) from these and starts the proxy with `start_litellm`
(support.litellm_proxy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llm_upstream import UpstreamServer
from support.store import RedisServer, have_redis_server

MODEL = "scripted"  # an OpenAI deployment (Chat Completions, Responses) on the scripted upstream
CLAUDE = "claude-sonnet-4-6"  # an Anthropic deployment (Messages) on the same upstream
OFFLOAD_GUARDRAIL = "mcp_offload.integrations.litellm.OffloadGuardrail"  # the native guardrail, by name
UPSTREAM_KEY = "sk-up"  # the credential the proxy sends upstream (the upstream's prompt cache is per credential)

StartRedis = Callable[[], RedisServer]


def scripted_models(upstream: UpstreamServer) -> list[dict[str, Any]]:
    return [
        {
            "model_name": MODEL,
            "litellm_params": {"model": "openai/gpt-5", "api_base": upstream.openai_url, "api_key": UPSTREAM_KEY},
        },
        {
            "model_name": CLAUDE,
            "litellm_params": {"model": f"anthropic/{CLAUDE}", "api_base": upstream.base_url, "api_key": UPSTREAM_KEY},
        },
    ]


@pytest.fixture(scope="module")
def litellm_upstream() -> Iterator[UpstreamServer]:
    with UpstreamServer(seed=0) as server:
        yield server


@pytest.fixture(scope="module")
def start_redis() -> Iterator[StartRedis]:
    if not have_redis_server():
        pytest.skip("redis-server is not installed: the stores behind the proxy are Redis here (.ci/redis.sh start)")
    started: list[RedisServer] = []

    def start() -> RedisServer:
        server = RedisServer().start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
