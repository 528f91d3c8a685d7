"""The per-API rules the gateway asks each API's package (`LlmApi`): whose upstream a relayed request goes to, whether
a request asks for one answer, and which counter its cache reads are added to."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_offload.apis.dialect import Answer, ModelToolCall
from mcp_offload.apis.registry import APIS, provider_for_request

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
    assert provider_for_request(path, headers, query) == provider


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
    assert APIS[api].single_choice(request_body) is single  # type: ignore[index]


def test_only_anthropic_counts_cache_reads_apart_from_input() -> None:
    assert {name for name, api in APIS.items() if api.cache_reads_apart} == {"anthropic"}


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
