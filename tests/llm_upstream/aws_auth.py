"""Who may call the scripted Bedrock, checked as AWS checks it: a SigV4 signature recomputed with botocore from the
request exactly as it arrived (method, raw path, query, the signed headers, the body) with the secret of a known test
access key, or a Bedrock API key (`Authorization: Bearer …`, `AWS_BEARER_TOKEN_BEDROCK`).

The test credentials (`CREDENTIALS`): a long-term key pair (AWS's documentation example), a session key with its
token, and a session whose token has expired. Failures are Bedrock's own 403s (`x-amzn-ErrorType` and
`{"message": …}`): no credential, an unknown key, a signature that does not match (a body changed after signing, a
different host), a date more than 5 minutes off, a missing or wrong session token, an expired one.
"""

from __future__ import annotations

import datetime
import hmac
import re
from dataclasses import dataclass

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SERVICE = "bedrock"
SKEW_S = 300  # AWS refuses a request signed more than 5 minutes from its clock


@dataclass(frozen=True, slots=True)
class TestCredential:
    access_key: str
    secret_key: str
    token: str | None = None
    expired: bool = False


CREDENTIALS = {
    c.access_key: c
    for c in (
        TestCredential("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        TestCredential("ASIAEXAMPLESESSION01", "sessionSecretKeyExample0000000000000000", "session-token-example"),
        TestCredential("ASIAEXAMPLEEXPIRED01", "expiredSecretKeyExample000000000000000", "expired", expired=True),
    )
}
API_KEYS = frozenset({"ABSKbedrock-api-key-example"})  # Bedrock API keys (bearer tokens)

_AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                   r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")  # fmt: skip


class AwsAuthError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@dataclass(frozen=True, slots=True)
class Caller:
    """Who signed (or the API key's owner): the scope of their prompt cache, and the region they signed for."""

    principal: str
    region: str | None


def check(method: str, url: str, headers: dict[str, str], body: bytes, *, region: str) -> Caller:
    """The caller of a request (header names lower-case; `url` with the raw path and query as received); raises
    `AwsAuthError` as Bedrock answers."""
    authorization = headers.get("authorization", "")
    if authorization.startswith("Bearer "):
        if authorization[7:].strip() in API_KEYS:
            return Caller("apikey:" + authorization[7:].strip()[:12], None)
        raise AwsAuthError("UnrecognizedClientException", "Invalid API Key format: Must start with pre-defined prefix")
    if not authorization:
        raise AwsAuthError("MissingAuthenticationTokenException", "Missing Authentication Token")
    found = _AUTH.match(authorization)
    if found is None:
        raise AwsAuthError("IncompleteSignatureException", f"Authorization header requires existence of either a "
                           f"'X-Amz-Date' or a 'Date' header. Authorization={authorization[:40]}")  # fmt: skip
    key_id, day, signed_region, service, signed, signature = found.groups()
    credential = CREDENTIALS.get(key_id)
    if credential is None:
        raise AwsAuthError("UnrecognizedClientException", "The security token included in the request is invalid.")
    if service != SERVICE or signed_region != region:
        raise AwsAuthError(
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region. Credential should be scoped to correct service: "
            f"'{SERVICE}'. ",
        )
    stamp = headers.get("x-amz-date", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        raise AwsAuthError("IncompleteSignatureException", "Authorization header requires 'X-Amz-Date'.") from None
    now = datetime.datetime.now(datetime.UTC)
    if abs((now - when).total_seconds()) > SKEW_S or stamp[:8] != day:
        earliest = now - datetime.timedelta(seconds=SKEW_S)
        raise AwsAuthError(
            "InvalidSignatureException",
            f"Signature expired: {stamp} is now earlier than {earliest:%Y%m%dT%H%M%SZ} ({now:%Y%m%dT%H%M%SZ} - 5 min.)",
        )
    names = signed.split(";")
    if "host" not in names:
        raise AwsAuthError("InvalidSignatureException", "'Host' must be a signed header.")
    request = AWSRequest(method=method, url=url, headers={n: headers.get(n, "") for n in names}, data=body)
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(credential.access_key, credential.secret_key, credential.token), SERVICE, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, signature):
        raise AwsAuthError(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
            "Access Key and signing method. Consult the service documentation for details.",
        )
    token = headers.get("x-amz-security-token")
    if credential.token is not None and (token != credential.token or "x-amz-security-token" not in names):
        raise AwsAuthError("UnrecognizedClientException", "The security token included in the request is invalid.")
    if credential.expired:
        raise AwsAuthError("ExpiredTokenException", "The security token included in the request is expired")
    return Caller("aws:" + credential.access_key, region)
