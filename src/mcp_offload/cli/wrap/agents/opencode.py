"""opencode (`opencode`, npm `opencode-ai`): Anthropic Messages, OpenAI Responses or the Gemini API, by the model
chosen (its built-in `anthropic`, `openai` and `google` providers, through the AI SDK).

opencode merges its configuration from several layers; the inline one, `OPENCODE_CONFIG_CONTENT`, comes after the
user's global, custom (`OPENCODE_CONFIG`) and project files, so its `provider.<id>.options.baseURL` wins and every
other setting stays the user's. wrap sets it to the user's own `OPENCODE_CONFIG_CONTENT` (when there is one) with
the three providers' `baseURL` at the gateway: no file is written. Keys stay the user's (`ANTHROPIC_API_KEY`, its
login). Providers of the user's own (a local model server, a proxy) keep their endpoints.

The `provider.<id>.options.baseURL` layout is that of opencode 1.x: wrap knows 1.0 up to 2.0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, Versions, WrapError

INLINE = "OPENCODE_CONFIG_CONTENT"
# opencode's built-in provider -> the path its baseURL carries after the host (the AI SDK providers' defaults)
PROVIDERS = {"anthropic": "/v1", "openai": "/v1", "google": "/v1beta"}


def pointed_config(config: dict[str, Any], gateway: str) -> dict[str, Any]:
    """`config` with the built-in providers' `options.baseURL` at the gateway."""
    providers = config.get("provider")
    providers = dict(providers) if isinstance(providers, dict) else {}
    for provider, path in PROVIDERS.items():
        own = providers.get(provider)
        own = own if isinstance(own, dict) else {}
        options = own.get("options")
        options = options if isinstance(options, dict) else {}
        providers[provider] = {**own, "options": {**options, "baseURL": gateway + path}}
    return {**config, "provider": providers}


def user_inline(environ: Mapping[str, str]) -> dict[str, Any]:
    text = environ.get(INLINE)
    if not text:
        return {}
    try:
        config = json.loads(text)
    except ValueError:
        config = None
    if not isinstance(config, dict):
        raise WrapError(f"{INLINE} is not a JSON object; wrap adds its providers to it: unset it or fix it")
    return config


class Opencode:
    name = "opencode"
    title = "opencode"
    executable = "opencode"
    install = Install("npm", "opencode-ai")
    apis = (APIS["anthropic"], APIS["responses"], APIS["gemini"])
    pointed_by = f"{INLINE}: provider.<id>.options.baseURL"
    knows = Versions((1, 0, 0), (2, 0, 0), "1.18.33")

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        config = pointed_config(user_inline(environ), gateway)
        return Launch(env={INLINE: json.dumps(config, separators=(",", ":"))})


AGENT = Opencode()
