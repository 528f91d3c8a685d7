"""Any other agent, `wrap --api anthropic|openai|gemini -- CMD`: pointed by the variable a generic client of that
provider's API reads for its base URL (the SDKs' own: `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` with its `/v1`,
`GOOGLE_GEMINI_BASE_URL`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.names import Provider
from mcp_offload.apis.registry import APIS, api_for_provider
from mcp_offload.cli.wrap.agents.base import Install, Launch, Versions

# the variable a generic client of each provider's API reads for its base URL, and the path the URL then carries
BASE_URL_VARIABLES: dict[Provider, tuple[str, str]] = {
    "anthropic": ("ANTHROPIC_BASE_URL", ""),
    "openai": ("OPENAI_BASE_URL", "/v1"),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", ""),
}
PROVIDERS: tuple[Provider, ...] = tuple(dict.fromkeys(api.provider for api in APIS.values()))


def base_url_env(provider: Provider, gateway: str) -> dict[str, str]:
    """The variable that points a generic client of `provider`'s API at `gateway`."""
    name, path = BASE_URL_VARIABLES[provider]
    return {name: gateway + path}


class AnyAgent:
    """An agent wrap does not know, run as `CMD` and pointed by its provider's base-URL variable."""

    name = "any"
    install: Install | None = None
    knows: Versions | None = None

    def __init__(self, executable: str, provider: Provider) -> None:
        self.executable = executable
        self.title = Path(executable).name
        self.provider = provider
        self.apis: tuple[LlmApi, ...] = (api_for_provider(provider),)
        self.pointed_by = BASE_URL_VARIABLES[provider][0]

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        return Launch(env=base_url_env(self.provider, gateway))
