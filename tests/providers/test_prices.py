"""Each provider's prompt-cache prices (`Provider.cache_prices`, cited in its package), and an API's home provider's
prices for a rewrite that knows no provider (`home_prices`)."""

from __future__ import annotations

import pytest

from mcp_offload.apis.registry import APIS, api_named
from mcp_offload.providers.anthropic.provider import FIVE_MINUTES, ONE_HOUR
from mcp_offload.providers.registry import PROVIDERS, home_of, home_prices

PRICES: list[tuple[str, str, str, float, float]] = [
    ("anthropic", "anthropic", "claude-opus-4-1", 1.25, 0.10),
    ("openai", "openai_chat", "gpt-4o-mini", 1.0, 0.50),
    ("openai", "responses", "gpt-4.1-nano", 1.0, 0.25),
    ("openai", "responses", "gpt-5-codex", 1.0, 0.10),
    ("openai", "openai_chat", "o3-mini", 1.0, 0.25),
    ("openai", "openai_chat", "an-unknown-model", 1.0, 0.10),  # where rewriting pays least
    ("gemini", "gemini", "gemini-2.5-flash", 1.0, 0.10),
    ("gemini", "gemini", "models/gemini-2.0-flash", 1.0, 0.25),
    ("gemini", "gemini", "gemini-3-pro-preview", 1.0, 0.10),
    ("gemini", "gemini", "", 1.0, 0.10),
    ("bedrock", "anthropic", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1.25, 0.10),
    ("bedrock", "converse", "anthropic.claude-haiku-4-5-20251001-v1:0", 1.25, 0.10),
    ("vertex", "anthropic", "claude-sonnet-4-5@20250929", 1.25, 0.10),
    ("vertex", "gemini", "gemini-2.5-pro", 1.0, 0.10),
    ("azure", "openai_chat", "gpt-4o", 1.0, 0.50),  # the deployment's name names its model
    ("azure", "responses", "prod-deployment", 1.0, 0.10),  # a name that names none: where rewriting pays least
]


@pytest.mark.parametrize(("provider", "api", "model", "write", "read"), PRICES)
def test_each_provider_prices_its_models(provider: str, api: str, model: str, write: float, read: float) -> None:
    prices = PROVIDERS[provider].cache_prices(api_named(api), model)
    assert (prices.write, prices.read) == (write, read)


def test_anthropic_prices_the_5_minute_cache_and_knows_the_1_hour_one() -> None:
    assert (FIVE_MINUTES.write, FIVE_MINUTES.read) == (1.25, 0.10) and ONE_HOUR.write == 2.0


def test_every_api_has_a_home_provider_whose_prices_a_rewrite_without_one_uses() -> None:
    homes = {name: home_of(api).name for name, api in APIS.items()}
    assert homes == {"anthropic": "anthropic", "openai_chat": "openai", "responses": "openai", "gemini": "gemini",
                     "converse": "bedrock"}  # fmt: skip
    assert home_prices(api_named("openai"), "gpt-4o") == PROVIDERS["openai"].cache_prices(api_named("chat"), "gpt-4o")


def test_input_cost_is_uncached_plus_cache_reads_and_writes_at_their_prices() -> None:
    assert FIVE_MINUTES.input_cost(uncached=100, cache_read=10_000, cache_write=1_000) == pytest.approx(2_350)
