"""The per-API and per-provider rules the gateway asks the packages: whose upstream a relayed request goes to
(`Provider.relay_claim`), whether a request asks for one answer (`LlmApi.single_choice`), and each API's usage read as
one normalised figure set (`Dialect.usage_of`, `Dialect.figures`)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_offload.apis.dialect import Answer, ModelToolCall
from mcp_offload.apis.registry import APIS
from mcp_offload.apis.usage import UsageFigures
from mcp_offload.providers.base import IncomingRequest
from mcp_offload.providers.registry import relay_provider

RELAYED: list[tuple[str, dict[str, str], str, str]] = [
    ("/v1/models", {}, "", "openai"),
    ("/v1/files", {"authorization": "Bearer k"}, "", "openai"),
    ("/v1/messages/count_tokens", {}, "", "anthropic"),
    ("/v1/models", {"anthropic-version": "2023-06-01"}, "", "anthropic"),
    ("/v1/models", {"x-api-key": "k"}, "", "anthropic"),
    ("/v1beta/models", {}, "", "gemini"),
    ("/v1/models", {"x-goog-api-key": "k"}, "", "gemini"),
    ("/v1/models", {}, "key=k", "gemini"),
    ("/v1beta/models", {"x-api-key": "k"}, "", "gemini"),  # Gemini's own path outranks Anthropic's header
    ("/v1/messages/batches", {"x-goog-api-key": "k"}, "", "gemini"),
]


@pytest.mark.parametrize(("path", "headers", "query", "provider"), RELAYED)
def test_a_relayed_request_goes_to_the_provider_that_claims_it(
    path: str, headers: dict[str, str], query: str, provider: str
) -> None:
    assert relay_provider(IncomingRequest("GET", path, query, headers)).name == provider


CHOICES: list[tuple[str, dict[str, Any], bool]] = [
    ("openai_chat", {}, True),
    ("openai_chat", {"n": 1}, True),
    ("openai_chat", {"n": 2}, False),
    ("responses", {"n": 2}, False),
    ("gemini", {"generationConfig": {"candidateCount": 1}}, True),
    ("gemini", {"generationConfig": {"candidateCount": 2}}, False),
    ("gemini", {"generationConfig": "not an object"}, True),
]


@pytest.mark.parametrize(("api", "request_body", "single"), CHOICES)
def test_only_a_request_for_one_answer_may_loop(api: str, request_body: dict[str, Any], single: bool) -> None:
    assert APIS[api].single_choice(request_body) is single


# one answer per API whose prompt was 6,100 tokens: 5,000 read from the cache, 1,000 written to it (Anthropic only: the
# others cache without a write), 7 output tokens; each in its API's own usage keys
ANSWERS: dict[str, tuple[dict[str, Any], UsageFigures]] = {
    "anthropic": (
        {"usage": {"input_tokens": 100, "cache_read_input_tokens": 5_000, "cache_creation_input_tokens": 1_000,
                   "output_tokens": 7}},
        UsageFigures(input_tokens=6_100, output_tokens=7, cache_read_tokens=5_000, cache_write_tokens=1_000),
    ),
    "openai_chat": (
        {"usage": {"prompt_tokens": 6_100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 5_000}}},
        UsageFigures(input_tokens=6_100, output_tokens=7, cache_read_tokens=5_000),
    ),
    "responses": (
        {"usage": {"input_tokens": 6_100, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 5_000}}},
        UsageFigures(input_tokens=6_100, output_tokens=7, cache_read_tokens=5_000),
    ),
    "gemini": (
        {"usageMetadata": {"promptTokenCount": 6_100, "candidatesTokenCount": 7, "cachedContentTokenCount": 5_000}},
        UsageFigures(input_tokens=6_100, output_tokens=7, cache_read_tokens=5_000),
    ),
    "converse": (  # Bedrock's Converse counts cache reads and writes apart from inputTokens, as Anthropic does
        {"usage": {"inputTokens": 100, "outputTokens": 7, "totalTokens": 6_107, "cacheReadInputTokens": 5_000,
                   "cacheWriteInputTokens": 1_000}},
        UsageFigures(input_tokens=6_100, output_tokens=7, cache_read_tokens=5_000, cache_write_tokens=1_000),
    ),
}  # fmt: skip


@pytest.mark.parametrize("api", list(APIS))
def test_each_api_reads_its_usage_as_one_normalised_figure_set(api: str) -> None:
    answer, figures = ANSWERS[api]
    dialect = APIS[api].dialect
    read = dialect.figures(dialect.usage_of(answer))
    assert read == figures
    assert read.cache_read_tokens == 5_000 and read.uncached_tokens == 6_100 - 5_000 - read.cache_write_tokens
    assert dialect.usage_of({"no": "usage"}) == {} and dialect.figures({}) == UsageFigures()


def test_a_gemini_round_is_a_model_content_of_calls_then_a_user_content_of_answers() -> None:
    call = ModelToolCall("c1", "search_large_output", '{"pattern": "x"}')
    assert APIS["gemini"].dialect.round_messages("Looking", [Answer(call, "found", False)]) == [
        {
            "role": "model",
            "parts": [
                {"text": "Looking"},
                {"functionCall": {"id": "c1", "name": "search_large_output", "args": {"pattern": "x"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "search_large_output", "response": {"output": "found"}}}
            ],
        },
    ]
