"""What a failed first connection says about the setup: the causes no retry fixes, each named in one line.

The startup check (`startup.py`) asks a node once; when that fails, `setup_problem` tells a mistake of the setup from
a server that is just down (which may come back, and is not an error at start):

    the server's certificate has expired / is signed by no CA we trust / is for another host   (TLS verification)
    the server asks for a client certificate, or refuses ours                                 (tls-auth-clients)
    a TLS URL to a plain port (the handshake gets no answer)                                  -> use redis://
    a plain URL to a TLS port (the server resets the connection at the first command)          -> use rediss://
    a client certificate or key that does not load

redis-py wraps each in its own `ConnectionError`/`TimeoutError`; the cause is the `ssl`/OS error in the chain.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping
from typing import Any

EXPIRED = 10  # X509_V_ERR_CERT_HAS_EXPIRED
NOT_YET_VALID = 9  # X509_V_ERR_CERT_NOT_YET_VALID
HOSTNAME_MISMATCH = 62  # X509_V_ERR_HOSTNAME_MISMATCH
IP_MISMATCH = 64  # X509_V_ERR_IP_ADDRESS_MISMATCH
CA_FLAG = "--store-tls-ca-file"
CERT_FLAGS = "--store-tls-cert-file and --store-tls-key-file"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        yield found
        found = found.__cause__ or found.__context__


def setup_problem(exc: BaseException, where: str, *, tls: bool, options: Mapping[str, Any]) -> str | None:
    """One line naming the setup mistake behind `exc` (the first connection to `where`, over TLS or not, made with
    the client `options`: ssl_ca_certs, ssl_certfile…), or None when the server may just be down."""
    chain = list(_chain(exc))
    for found in chain:
        if isinstance(found, ssl.SSLCertVerificationError):
            return _verification(found, where, options)
    for found in chain:
        if isinstance(found, ssl.SSLError):
            return _tls_error(found, where, options)
    text = " ".join(str(found) for found in chain)
    if tls and "handshake" in text and any(isinstance(found, TimeoutError) for found in chain):
        return (
            f"{where} did not answer the TLS handshake, as a plain (non-TLS) port does: use redis:// for a plain port"
        )
    if not tls and any(isinstance(found, ConnectionResetError) for found in chain):
        return (
            f"{where} reset the connection at the first command, as a TLS-only port does: use rediss:// for a TLS port"
        )
    return None


def _verification(found: ssl.SSLCertVerificationError, where: str, options: Mapping[str, Any]) -> str:
    code, reason = found.verify_code, found.verify_message
    if code == EXPIRED:
        return f"{where}'s TLS certificate has expired ({reason}): the server needs a renewed certificate"
    if code == NOT_YET_VALID:
        return f"{where}'s TLS certificate is not valid yet ({reason}): check the server's certificate and clocks"
    if code in (HOSTNAME_MISMATCH, IP_MISMATCH):
        return f"{where}'s TLS certificate is for another host ({reason}): connect by a name the certificate holds"
    ca = options.get("ssl_ca_certs")
    trusted = f"the CA in {ca}" if ca else f"any of the system's CAs (no {CA_FLAG} given)"
    return f"{where}'s TLS certificate is not signed by {trusted} ({reason}): set {CA_FLAG} to the CA that signed it"


def _tls_error(found: ssl.SSLError, where: str, options: Mapping[str, Any]) -> str:
    reason = str(getattr(found, "reason", None) or found)
    if isinstance(found, ssl.SSLEOFError):  # the server checks a client certificate after the handshake (TLS 1.3)
        if not options.get("ssl_certfile"):
            return (
                f"{where} closed the TLS connection after the handshake, as a server that asks for a client "
                f"certificate (tls-auth-clients) does: set {CERT_FLAGS}"
            )
        return (
            f"{where} closed the TLS connection after the handshake: it refused our client certificate (it must be "
            "signed by a CA the server trusts)"
        )
    if reason in ("TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN"):
        return f"{where} refused our client certificate ({reason}): it must be signed by a CA the server trusts"
    if reason in ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_HANDSHAKE_FAILURE") and not options.get(
        "ssl_certfile"
    ):
        return f"{where} asks for a client certificate ({reason}): set {CERT_FLAGS}"
    if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNKNOWN_PROTOCOL", "HTTP_REQUEST"):
        return f"{where} does not speak TLS ({reason}): use redis:// for a plain port"
    if getattr(found, "library", None) in ("X509", "PEM") or reason in ("KEY_VALUES_MISMATCH", "NO_START_LINE"):
        return f"the TLS certificate or key files could not be loaded ({reason}): check {CA_FLAG}, {CERT_FLAGS}"
    return f"TLS to {where} failed ({reason})"
