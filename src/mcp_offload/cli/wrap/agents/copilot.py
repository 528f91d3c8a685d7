"""GitHub Copilot CLI (`copilot`, npm `@github/copilot`): pointed by `COPILOT_PROVIDER_BASE_URL`, its variable for a
model provider of the user's own ("bring your own key"; no GitHub login needed then). GitHub's own models cannot go
through the gateway (they sit behind GitHub's token exchange), so wrap needs such a provider: its key
(`COPILOT_PROVIDER_API_KEY`, `_BEARER_TOKEN` or `_API_KEY_COMMAND`) and its kind stay the user's:

- `COPILOT_PROVIDER_TYPE` `openai` (the default) with `COPILOT_PROVIDER_WIRE_API` `completions` (the default) or
  `responses`: the gateway's `/v1`; `anthropic`: the gateway's root (Copilot's Anthropic client adds `/v1/messages`).
  `azure` and the `websockets` transport are refused in one line: the gateway serves neither.
- A base URL the user set for that provider (a local server, a company proxy) becomes the upstream of a gateway
  started for the run (`upstreams`), so the requests still end up where they went without wrap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, WrapError

CREDENTIALS = ("COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_BEARER_TOKEN", "COPILOT_PROVIDER_API_KEY_COMMAND")
BASE_URL = "COPILOT_PROVIDER_BASE_URL"


def provider_type(environ: Mapping[str, str]) -> str:
    """`openai` or `anthropic`, as the user set `COPILOT_PROVIDER_TYPE`; WrapError for one the gateway cannot serve."""
    kind = (environ.get("COPILOT_PROVIDER_TYPE") or "openai").strip().lower()
    if kind not in ("openai", "anthropic"):
        raise WrapError(
            f"COPILOT_PROVIDER_TYPE={kind[:40]!r}: the gateway serves Copilot CLI's openai and anthropic provider "
            "types only"
        )
    wire = (environ.get("COPILOT_PROVIDER_WIRE_API") or "completions").strip().lower()
    if kind == "openai" and wire not in ("completions", "responses"):
        raise WrapError(f"COPILOT_PROVIDER_WIRE_API={wire[:40]!r}: Copilot CLI takes completions or responses")
    if (environ.get("COPILOT_PROVIDER_TRANSPORT") or "http").strip().lower() != "http":
        raise WrapError("COPILOT_PROVIDER_TRANSPORT: the gateway takes Copilot CLI's requests over http only")
    return kind


class CopilotCli:
    name = "copilot"
    title = "Copilot CLI"
    executable = "copilot"
    install = Install("npm", "@github/copilot")
    apis = (APIS["openai_chat"], APIS["responses"], APIS["anthropic"])
    pointed_by = "COPILOT_PROVIDER_BASE_URL (a provider of your own: COPILOT_PROVIDER_API_KEY)"
    knows = None  # pointed by variables only: any version

    def upstreams(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The user's own provider base URL, as the gateway's upstream flag of its kind (none when unset). Called
        before any gateway starts, so a setting wrap cannot serve is refused with nothing started."""
        kind = checked_type(environ)
        url = (environ.get(BASE_URL) or "").strip()
        return {f"{kind}_upstream": url.rstrip("/")} if url else {}

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        kind = checked_type(environ)
        return Launch(env={BASE_URL: gateway + ("/v1" if kind == "openai" else "")})


def checked_type(environ: Mapping[str, str]) -> str:
    """The provider type, after checking that the user has a provider of their own."""
    kind = provider_type(environ)
    if not any(environ.get(name) for name in CREDENTIALS) and not environ.get(BASE_URL):
        raise WrapError(
            "Copilot CLI goes through the gateway only with a model provider of your own: set "
            "COPILOT_PROVIDER_API_KEY (and COPILOT_PROVIDER_TYPE, COPILOT_MODEL); GitHub's own models cannot be "
            "reached through it"
        )
    return kind


AGENT = CopilotCli()
