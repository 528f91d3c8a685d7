"""The providers behind the gateway: one pooled `httpx2.AsyncClient`, a base URL per provider, and the header rules
of a reverse proxy.

- URLs: each provider's base URL (its `--NAME-upstream` flag, its `MCP_OFFLOAD_NAME_UPSTREAM` variable, or its
  default: `Provider.upstream`) and how a client path goes under it (`Provider.upstream_url`; e.g. OpenAI's base
  carries the `/v1`). The query string is kept (`/v1/messages?beta=true`). A provider without a default and without
  a setting answers its calls with `upstream_not_configured`, in its own error document.
- Which provider a path that is not one of the APIs goes to (`/v1/models`, `/v1/files`, ...): the one that claims it
  most surely (`Provider.relay_claim`, asked by `providers.registry.relay_provider`), else OpenAI.
- Before a request goes, its provider has the last word (`Provider.prepare`: a cloud signs it there).
- Headers: the client's headers go upstream untouched (credentials, `anthropic-beta`, `openai-organization`, ...)
  except hop-by-hop ones (RFC 9110 7.6.1, plus those named in `Connection`), `Host` and `Content-Length` (set from
  the body actually sent) and the gateway's own (`x-mcp-offload-*`, `Proxy-Authorization`). For the API calls the
  gateway reads the answer, so it asks for it uncompressed (`Accept-Encoding: identity`); other paths are relayed
  with their encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx2

from mcp_offload.errors import reason_of
from mcp_offload.gateway.errors import GatewayError, missing_upstream
from mcp_offload.providers.base import OutgoingRequest, Provider, ProviderRefusal
from mcp_offload.providers.registry import PROVIDERS

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
    # base URL by provider name (`Provider.name`); a provider not named here: its `upstream.default`
    bases: Mapping[str, str | None] = field(default_factory=dict)
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 600.0  # a long generation can be silent for minutes (the APIs ping, but not all do)
    max_connections: int = 200

    def base(self, provider: Provider) -> str | None:
        """`provider`'s base URL: the one set, else its default (None: neither)."""
        return self.bases.get(provider.name) or provider.upstream.default


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
        """Where a request for `path` goes on `provider`; `GatewayError` (`upstream_not_configured`) when its base
        URL was never set and it has no default."""
        base = self.config.base(provider)
        if base is None:
            raise missing_upstream(provider)
        return provider.upstream_url(base, path, query)

    async def open(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        content: bytes | None,
        *,
        provider: Provider | None = None,
    ) -> httpx2.Response:
        """Send a request (prepared by `provider`, which signs it where it must) and return the response."""
        if provider is not None:
            try:
                outgoing = await provider.prepare(OutgoingRequest(method, url, headers, content))
            except ProviderRefusal as refusal:
                raise GatewayError(refusal.status, refusal.code, refusal.message) from None
            method, url, headers, content = outgoing.method, outgoing.url, list(outgoing.headers), outgoing.content
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
                f"Check {_flags(provider)} and the network.",
            ) from None

    async def aclose(self) -> None:
        await self._client.aclose()


def _flags(provider: Provider | None) -> str:
    """The flag that sets `provider`'s upstream (every provider's for a relayed request)."""
    providers = [provider] if provider is not None else list(PROVIDERS.values())
    return " / ".join(p.upstream.flag for p in providers)


def _origin(url: str) -> str:
    parsed = httpx2.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"
