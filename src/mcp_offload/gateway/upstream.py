"""The LLM providers behind the gateway: one pooled `httpx2.AsyncClient`, a base URL per provider, and the header
rules of a reverse proxy.

- URLs: Anthropic's base is used as `ANTHROPIC_BASE_URL` is (`https://api.anthropic.com` + `/v1/messages`); OpenAI's
  as `OPENAI_BASE_URL` is (`https://api.openai.com/v1` + `/chat/completions`), so a client path `/v1/x` maps to
  `<openai base>/x`. The query string is kept (`/v1/messages?beta=true`).
- Gemini's base is used as `GOOGLE_GEMINI_BASE_URL` is (`https://generativelanguage.googleapis.com` +
  `/v1beta/models/…`).
- Which provider a path that is not one of the APIs goes to (`/v1/models`, `/v1/files`, ...): Gemini for its own
  paths and key (`/v1beta/…`, `models/{m}:method`, `x-goog-api-key`, `?key=`), Anthropic when the request carries
  `anthropic-version` or `x-api-key`, else OpenAI: each API's `relay_claim`, asked by
  `apis.registry.provider_for_request`.
- Headers: the client's headers go upstream untouched (credentials, `anthropic-beta`, `openai-organization`, ...)
  except hop-by-hop ones (RFC 9110 7.6.1, plus those named in `Connection`), `Host` and `Content-Length` (set from
  the body actually sent) and the gateway's own (`x-mcp-offload-*`, `Proxy-Authorization`). For the three APIs the
  gateway reads the answer, so it asks for it uncompressed (`Accept-Encoding: identity`); other paths are relayed
  with their encoding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import httpx2

from mcp_offload.apis.gemini.routes import GEMINI_DEFAULT
from mcp_offload.apis.names import Provider
from mcp_offload.errors import reason_of
from mcp_offload.gateway.errors import GatewayError

ANTHROPIC_DEFAULT = "https://api.anthropic.com"
OPENAI_DEFAULT = "https://api.openai.com/v1"

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
_NOT_FORWARDED = frozenset({"host", "content-length", "x-mcp-offload-token", "x-mcp-offload-session"})
_NOT_RETURNED = frozenset({"content-length", "date", "server"})


def request_headers(pairs: Iterable[tuple[str, str]], *, decoded: bool) -> list[tuple[str, str]]:
    """The headers to send upstream (names lower-case, order and repeats kept)."""
    items = list(pairs)
    named = {token.strip().lower() for name, value in items if name == "connection" for token in value.split(",")}
    out = [(n, v) for n, v in items if n not in HOP_BY_HOP and n not in _NOT_FORWARDED and n not in named]
    if decoded:
        out = [(n, v) for n, v in out if n != "accept-encoding"]
        out.append(("accept-encoding", "identity"))
    return out


def response_headers(headers: httpx2.Headers, *, decoded: bool) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers for the client (ASGI form); length and framing are ours to set."""
    named = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    out: list[tuple[bytes, bytes]] = []
    for raw_name, raw_value in headers.raw:
        name = raw_name.decode("latin-1").lower()
        if name in HOP_BY_HOP or name in _NOT_RETURNED or name in named:
            continue
        if decoded and name == "content-encoding":
            continue
        out.append((name.encode("latin-1"), raw_value))
    return out


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    anthropic_base: str = ANTHROPIC_DEFAULT
    openai_base: str = OPENAI_DEFAULT
    gemini_base: str = GEMINI_DEFAULT
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 600.0  # a long generation can be silent for minutes (the APIs ping, but not all do)
    max_connections: int = 200


class ProviderClient:
    """The pooled client. `open` sends a request and returns the response with its body not read yet (the caller
    reads or streams it, and must close it); connection failures become `GatewayError` 502/504."""

    def __init__(self, config: ProviderConfig, *, client: httpx2.AsyncClient | None = None) -> None:
        self.config = config
        self._client = client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(config.read_timeout_s, connect=config.connect_timeout_s),
            limits=httpx2.Limits(max_connections=config.max_connections, max_keepalive_connections=64),
            follow_redirects=False,
            trust_env=False,  # the operator's upstream URL is where requests go; no proxy/netrc surprises
        )

    def url(self, provider: Provider, path: str, query: str) -> str:
        if provider == "anthropic":
            url = self.config.anthropic_base.rstrip("/") + path
        elif provider == "gemini":
            url = self.config.gemini_base.rstrip("/") + path
        else:
            rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
            url = self.config.openai_base.rstrip("/") + rest
        return f"{url}?{query}" if query else url

    async def open(
        self, method: str, url: str, headers: list[tuple[str, str]], content: bytes | None
    ) -> httpx2.Response:
        request = self._client.build_request(method, url, headers=headers, content=content)
        try:
            return await self._client.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise GatewayError(
                504, "upstream_timeout", f"The upstream at {_origin(url)} did not answer in time ({reason_of(exc)})."
            ) from None
        except httpx2.HTTPError as exc:
            raise GatewayError(
                502,
                "upstream_unreachable",
                f"The gateway could not reach the upstream at {_origin(url)}: {reason_of(exc)}. "
                "Check --anthropic-upstream / --openai-upstream / --gemini-upstream and the network.",
            ) from None

    async def aclose(self) -> None:
        await self._client.aclose()


def _origin(url: str) -> str:
    parsed = httpx2.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"
