"""Who the gateway is to AWS: its own credentials from botocore's standard chain, and SigV4 signing by botocore.

A client signs its request for the gateway's host and over the body it sent; a body the gateway rewrote (offloaded
results, its retrieval tools, the loop's follow-up calls) would fail that signature at Bedrock. So the gateway
signs what it sends itself, as LiteLLM and the AWS SDKs' own proxies do:

- **Credentials**: botocore's resolver chain, the one every AWS SDK and the CLI use: the environment
  (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`), the shared files (`~/.aws/credentials`,
  `~/.aws/config`, `AWS_PROFILE`), SSO, `credential_process`, web identity, the container and instance roles
  (https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html). Temporary credentials refresh
  themselves (botocore's RefreshableCredentials). Resolving may read files or call a metadata service, so it runs in
  a worker thread, once, then again at most every `RETRY_S` while none are found.
- **Signing**: `botocore.auth.SigV4Auth` for the service `bedrock` and the region of the upstream's host
  (`bedrock-runtime.<region>.amazonaws.com`), else the region the client signed for, else the chain's region
  (`AWS_REGION`, the profile's). The client's own signature headers are dropped first.
- **Untouched**: a Bedrock API key (`Authorization: Bearer …`, `AWS_BEARER_TOKEN_BEDROCK`) signs nothing: it goes
  upstream as sent. Without credentials of its own the gateway relays the request as the client signed it (Bedrock
  then answers with its own 403, relayed to the client).

The credentials never appear in a log line or in the store; the session of a signed request is scoped by the access
key id the client signed with (`client_access_key`), never by its secret.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio.to_thread

if TYPE_CHECKING:
    from botocore.credentials import Credentials

SERVICE = "bedrock"  # the signing name of bedrock-runtime (botocore's service model: "signingName": "bedrock")
RETRY_S = 60.0
SIGNATURE_HEADERS = frozenset({"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"})
_HOST_REGION = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
_SCOPE = re.compile(r"Credential=([A-Z0-9]+)/\d{8}/([a-z0-9-]+)/")
MISSING_BOTOCORE = "Amazon Bedrock support needs botocore: pip install 'mcp-offload[bedrock]'"


class BotocoreMissing(RuntimeError):
    def __init__(self) -> None:
        super().__init__(MISSING_BOTOCORE)


def botocore_available() -> bool:
    try:
        import botocore  # noqa: F401
    except ImportError:
        return False
    return True


def client_access_key(authorization: str) -> str | None:
    """The access key id a SigV4 `Authorization` header was signed with (what scopes its session)."""
    found = _SCOPE.search(authorization)
    return found.group(1) if found else None


def signing_region(host: str, authorization: str, default: str | None) -> str | None:
    """The region to sign for: the upstream host's, else the client's signing scope's, else `default`."""
    found = _HOST_REGION.match(host)
    if found:
        return found.group(1)
    scope = _SCOPE.search(authorization)
    return scope.group(2) if scope else default


class AwsSigner:
    """The gateway's AWS identity: resolves its credentials once (in a thread) and signs outgoing requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credentials: Credentials | None = None
        self._region: str | None = None
        self._resolved_at: float | None = None

    def _resolve(self) -> tuple[Credentials | None, str | None]:
        with self._lock:
            stale = self._credentials is None and (
                self._resolved_at is None or time.monotonic() - self._resolved_at > RETRY_S
            )
            if stale:
                try:
                    from botocore.session import Session
                except ImportError:
                    raise BotocoreMissing from None
                session = Session()
                self._credentials = session.get_credentials()
                self._region = session.get_config_variable("region")
                self._resolved_at = time.monotonic()
            return self._credentials, self._region

    async def credentials(self) -> tuple[Credentials | None, str | None]:
        """The gateway's credentials (None: the chain found none) and the chain's region."""
        return await anyio.to_thread.run_sync(self._resolve)

    async def sign(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None
    ) -> list[tuple[str, str]] | None:
        """`headers` signed with the gateway's credentials for `url` and `body` (the client's signature headers
        replaced); None when the gateway has no credentials (the request then goes as the client sent it)."""
        credentials, default_region = await self.credentials()
        if credentials is None:
            return None
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        authorization = next((v for n, v in headers if n == "authorization"), "")
        host = url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        region = signing_region(host, authorization, default_region) or "us-east-1"
        kept = [(n, v) for n, v in headers if n not in SIGNATURE_HEADERS]
        request = AWSRequest(method=method, url=url, headers=dict(kept), data=body or b"")
        frozen = await anyio.to_thread.run_sync(credentials.get_frozen_credentials)  # a refresh may call STS
        SigV4Auth(frozen, SERVICE, region).add_auth(request)
        added = [(n.lower(), str(v)) for n, v in request.headers.items() if n.lower() in SIGNATURE_HEADERS]
        return [*kept, *added]
