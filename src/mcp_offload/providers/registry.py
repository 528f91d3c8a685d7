"""Every provider the gateway sends requests to, one line each (`PROVIDERS`), and what the gateway asks of them
together: which provider and API call a request is (`call_for_request`), whose upstream a request no provider
routes goes to (`relay_provider`), an API's home provider (`home_of`: whose prices a rewrite outside the gateway
uses), and every credential header (`credential_headers`).

Adding a provider: its package under `providers/` and its line here, or, from outside (a plug-in, a test),
`register_provider(MyProvider())`. The order is the order requests are routed in.
"""

from __future__ import annotations

from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.anthropic import AnthropicProvider
from mcp_offload.providers.azure import AzureProvider
from mcp_offload.providers.base import ApiCall, IncomingRequest, Provider
from mcp_offload.providers.bedrock import BedrockProvider
from mcp_offload.providers.gemini import GeminiProvider
from mcp_offload.providers.openai import OpenAIProvider
from mcp_offload.providers.prices import CachePrices
from mcp_offload.providers.vertex import VertexProvider

_BUILT_IN: tuple[Provider, ...] = (
    AnthropicProvider(),
    OpenAIProvider(),
    GeminiProvider(),
    BedrockProvider(),
    VertexProvider(),
    AzureProvider(),
)
PROVIDERS: dict[str, Provider] = {p.name: p for p in _BUILT_IN}
RELAY_FALLBACK = "openai"  # a relayed request no provider claims (OpenAI-compatible servers share its paths)


def register_provider(provider: Provider) -> None:
    """Add `provider` to the gateway (its routes, its `--NAME-upstream` flag and variable, its credential headers)."""
    if provider.name in PROVIDERS:
        raise ValueError(f"cannot register provider {provider.name!r}: the name is taken")
    PROVIDERS[provider.name] = provider


def unregister_provider(provider: Provider) -> None:
    """Take a registered provider out again (tests)."""
    if PROVIDERS.get(provider.name) is provider:
        del PROVIDERS[provider.name]


def call_for_request(request: IncomingRequest) -> tuple[Provider, ApiCall] | None:
    """The provider and API call the gateway serves `request` as; None for anything else (relayed as is)."""
    for provider in PROVIDERS.values():
        call = provider.route(request)
        if call is not None:
            return provider, call
    return None


def relay_provider(request: IncomingRequest) -> Provider:
    """Whose upstream a request no provider routes goes to: the one that claims it most surely
    (`Provider.relay_claim`), else `RELAY_FALLBACK`."""
    claim, provider = max(((p.relay_claim(request), p) for p in PROVIDERS.values()), key=lambda c: c[0])
    return provider if claim > 0 else PROVIDERS[RELAY_FALLBACK]


def home_of(api: LlmApi) -> Provider:
    """The first provider that serves `api` (its vendor's own endpoint for the four public APIs)."""
    found = next((p for p in PROVIDERS.values() if any(a is api for a in p.apis)), None)
    if found is None:
        raise LookupError(f"no provider serves the {api.title} API: register one that lists it in `apis`")
    return found


def home_prices(api: LlmApi, model: str) -> CachePrices:
    """The cache prices of `api`'s home provider for `model`: what a rewrite that knows no provider prices at (the
    `Compactor`, the compression service, the LiteLLM guardrail)."""
    return home_of(api).cache_prices(api, model)


def credential_headers() -> tuple[str, ...]:
    """Every provider's credential header names, in registry order (the order session keys hash them in; a new
    provider's new names come last, so existing sessions keep their keys)."""
    names: dict[str, None] = {}
    for provider in PROVIDERS.values():
        names.update(dict.fromkeys(provider.credential_headers))
    return tuple(names)
