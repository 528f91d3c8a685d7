"""Every LLM API mcp-offload speaks, one line each. Adding an API: its package under `apis/`, its name in
`names.ApiName`, and its line here (the order is the order requests are matched in)."""

from __future__ import annotations

from collections.abc import Mapping

from mcp_offload.apis.anthropic import AnthropicApi
from mcp_offload.apis.base import DEFAULT_PROVIDER, LlmApi, Route
from mcp_offload.apis.gemini import GeminiApi
from mcp_offload.apis.names import ApiName, Provider
from mcp_offload.apis.openai_chat import OpenAIChatApi
from mcp_offload.apis.responses import ResponsesApi

APIS: dict[ApiName, LlmApi] = {
    "anthropic": AnthropicApi(),
    "openai_chat": OpenAIChatApi(),
    "responses": ResponsesApi(),
    "gemini": GeminiApi(),
}


def api_named(name: str) -> LlmApi:
    """The API called `name` (an `ApiName`); a ValueError naming the known ones otherwise."""
    try:
        return APIS[name]  # type: ignore[index]  # a str that is no ApiName is the KeyError below
    except KeyError:
        raise ValueError(f"unknown API {name!r}: use one of {', '.join(APIS)}") from None


def api_for_request(method: str, path: str) -> tuple[LlmApi, Route] | None:
    """The API the gateway serves `method path` as, with its route; None for anything else (relayed as is)."""
    for api in APIS.values():
        route = api.route(method, path)
        if route is not None:
            return api, route
    return None


def api_for_provider(provider: Provider) -> LlmApi:
    """The first API of `provider`: whose error document a failure on a relayed path gets."""
    return next(api for api in APIS.values() if api.provider == provider)


def api_for_format(format_name: str) -> LlmApi | None:
    """The API whose `format_name` (the Compactor's public word) is `format_name`."""
    return next((api for api in APIS.values() if api.format_name == format_name), None)


def provider_for_request(path: str, headers: Mapping[str, str], query: str = "") -> Provider:
    """Whose upstream a request on a relayed path goes to: the API that claims it most surely
    (`LlmApi.relay_claim`), else `DEFAULT_PROVIDER`."""
    claim, api = max(((api.relay_claim(path, headers, query), api) for api in APIS.values()), key=lambda c: c[0])
    return api.provider if claim > 0 else DEFAULT_PROVIDER
