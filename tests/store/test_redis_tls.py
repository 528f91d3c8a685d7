"""Redis over TLS (rediss://, rediss+cluster://) against real TLS-only redis-servers with a throwaway CA (openssl,
`.ci/redis-tls-certs.sh`), client certificates required: certificate verification, client certificates, the TLS
settings (flags, environment, the URL's query), and the mistakes of a setup, each one line at start (exit status 1,
nothing created). The store suite itself runs over TLS through the `backend` parameter ("redis-tls",
"cluster-tls"): the same tests as over plain TCP.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

from mcp_offload.core.services import build_services
from mcp_offload.errors import SettingsError
from mcp_offload.settings import Settings
from mcp_offload.store import StoreLocationError, open_store
from mcp_offload.store.handles import scope_key
from mcp_offload.store.redis import RedisStore
from support.store import NO_REDIS, SCOPE_A, RedisServer, have_redis_server, make_certs, put_bytes


def _parts(url: str) -> tuple[str, str, dict[str, str]]:
    """scheme, host:port list, query options of a Redis URL."""
    scheme, rest = url.split("://", 1)
    base, _, query = rest.partition("?")
    return scheme, base.split("/", 1)[0], dict(parse_qsl(query))


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("mcp-offload"))
    return subprocess.run(
        [exe, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _refused(done: subprocess.CompletedProcess[str], cwd: Path, *needles: str) -> None:
    """Exit status 1, one line on stderr naming the cause, nothing on stdout, nothing created."""
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert all(n in done.stderr for n in needles), done.stderr
    assert done.stdout == ""
    assert list(cwd.iterdir()) == []


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second throwaway CA, which signed neither the servers' nor the clients' certificates."""
    return make_certs(tmp_path_factory.mktemp("other-ca"))


@pytest.fixture(scope="module")
def expired_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A TLS redis-server whose certificate expired the moment it was made."""
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer(tls=make_certs(tmp_path_factory.mktemp("expired"), server_days=-1)).start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_store_over_tls_with_a_client_certificate_round_trips(redis_tls_url: str) -> None:
    _, where, query = _parts(redis_tls_url)
    settings = Settings(
        store=f"rediss://{where}/0",
        store_tls_ca_file=query["ssl_ca_certs"],
        store_tls_cert_file=query["ssl_certfile"],
        store_tls_key_file=query["ssl_keyfile"],
    )
    services = build_services(settings)  # the settings, not the URL's query: the same connection
    scope = scope_key(secrets.token_hex(8))  # the default key prefix: a scope of this test alone, removed after
    try:
        handle = await put_bytes(services.store, scope, b"over TLS\n" * 100)
        async with services.store.open(scope, handle) as out:
            assert out.read_bytes(0, 9) == b"over TLS\n"
        await services.store.delete(scope, handle)
        await services.savings.read(1)  # the records kept beside the outputs connect the same way
    finally:
        await services.aclose()


async def test_a_wrong_ca_is_refused_in_one_line_and_no_check_at_all_is_a_choice(
    redis_tls_url: str, other_ca: Path
) -> None:
    _, where, query = _parts(redis_tls_url)
    client = f"ssl_certfile={query['ssl_certfile']}&ssl_keyfile={query['ssl_keyfile']}"
    with pytest.raises(StoreLocationError) as refused:
        RedisStore(f"rediss://{where}/0?ssl_ca_certs={other_ca}/ca.crt&{client}")
    assert "\n" not in str(refused.value)
    assert f"{where}'s TLS certificate is not signed by the CA in {other_ca}/ca.crt" in str(refused.value)
    with pytest.raises(StoreLocationError, match="not signed by any of the system's CAs"):
        RedisStore(f"rediss://{where}/0?{client}")
    unchecked = Settings(store=f"rediss://{where}/0?{client}", store_tls_cert_reqs="none").store_location()
    store = RedisStore(
        unchecked, prefix=f"mcp-offload-test:{secrets.token_hex(6)}"
    )  # no check at all: a trusted network only
    try:
        handle = await put_bytes(store, SCOPE_A, b"unchecked\n")
        assert [m.handle for m in await store.list(SCOPE_A)] == [handle]
    finally:
        await store.aclose()


def test_client_certificates_are_required_and_checked(redis_tls_url: str, other_ca: Path) -> None:
    _, where, query = _parts(redis_tls_url)
    with pytest.raises(StoreLocationError, match="client certificate") as refused:
        RedisStore(f"rediss://{where}/0?ssl_ca_certs={query['ssl_ca_certs']}")
    assert "--store-tls-cert-file" in str(refused.value)
    with pytest.raises(StoreLocationError, match="client certificate"):
        RedisStore(
            f"rediss://{where}/0?ssl_ca_certs={query['ssl_ca_certs']}"
            f"&ssl_certfile={other_ca}/client.crt&ssl_keyfile={other_ca}/client.key"
        )


def test_the_setup_mistakes_are_one_line_each_at_start(
    redis_url: str, redis_tls_url: str, expired_server: RedisServer, other_ca: Path, tmp_path: Path
) -> None:
    """A TLS URL to a plain port, a plain URL to a TLS port, an expired certificate, a wrong CA (by flag and by
    environment variable), a CA file that is not there: exit status 1, one line naming the cause, nothing created."""
    _, plain, _ = _parts(redis_url)
    _, where, query = _parts(redis_tls_url)
    client = f"ssl_certfile={query['ssl_certfile']}&ssl_keyfile={query['ssl_keyfile']}"
    _refused(
        _cli("--store", f"rediss://{plain}/0", cwd=tmp_path),
        tmp_path,
        f"{plain} did not answer the TLS handshake",
        "use redis://",
    )
    _refused(
        _cli("gateway", "--store", f"redis://{where}/0", cwd=tmp_path),
        tmp_path,
        f"{where} reset the connection at the first command",
        "use rediss://",
    )
    _, expired, expired_query = _parts(expired_server.url)
    _refused(
        _cli(
            "outputs",
            "list",
            "--store",
            f"rediss://{expired}/0",
            "--store-tls-ca-file",
            expired_query["ssl_ca_certs"],
            cwd=tmp_path,
        ),
        tmp_path,
        f"{expired}'s TLS certificate has expired",
    )
    _refused(
        _cli("--store", f"rediss://{where}/0?{client}", "--store-tls-ca-file", f"{other_ca}/ca.crt", cwd=tmp_path),
        tmp_path,
        f"not signed by the CA in {other_ca}/ca.crt",
    )
    _refused(
        _cli(
            "--store",
            f"rediss://{where}/0?{client}",
            cwd=tmp_path,
            env={"MCP_OFFLOAD_STORE_TLS_CA_FILE": f"{other_ca}/ca.crt"},
        ),
        tmp_path,
        f"not signed by the CA in {other_ca}/ca.crt",
    )
    _refused(
        _cli("--store", f"rediss://{where}/0", "--store-tls-ca-file", str(tmp_path / "no-such-ca.pem"), cwd=tmp_path),
        tmp_path,
        f"the TLS file {tmp_path / 'no-such-ca.pem'} (ssl_ca_certs, --store-tls-ca-file) does not exist",
    )


def test_the_tls_settings_work_from_flags_and_environment(redis_tls_url: str, tmp_path: Path) -> None:
    _, where, query = _parts(redis_tls_url)
    flags = ["--store-tls-ca-file", query["ssl_ca_certs"], "--store-tls-cert-file", query["ssl_certfile"]]
    done = _cli(
        "outputs", "list", "--store", f"rediss://{where}/0", *flags, cwd=tmp_path,
        env={"MCP_OFFLOAD_STORE_TLS_KEY_FILE": query["ssl_keyfile"]},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_tls_cluster_refuses_a_wrong_ca_and_a_plain_url(redis_tls_cluster_url: str, other_ca: Path) -> None:
    _, seeds, query = _parts(redis_tls_cluster_url)
    client = f"ssl_certfile={query['ssl_certfile']}&ssl_keyfile={query['ssl_keyfile']}"
    first = seeds.split(",")[0]
    with pytest.raises(StoreLocationError, match=f"{first}'s TLS certificate is not signed by the CA in {other_ca}"):
        RedisStore(f"rediss+cluster://{seeds}?ssl_ca_certs={other_ca}/ca.crt&{client}")
    with pytest.raises(StoreLocationError, match=f"{first} reset the connection at the first command"):
        RedisStore(f"redis+cluster://{seeds}")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"store": "/tmp/a-directory", "store_tls_ca_file": "/ca.pem"}, "the store is the directory /tmp/a-directory"),
        ({"store": "rediss://h:1/0?ssl_ca_certs=/a.pem", "store_tls_ca_file": "/b.pem"}, "say it once"),
        ({"store_tls_cert_reqs": "maybe"}, "one of required, optional, none"),
    ],
)
def test_tls_settings_that_cannot_work_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**settings).store_location()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (
            "redis://h:1/0?ssl_ca_certs=/etc/hostname",
            "is not TLS but carries TLS options .ssl_ca_certs.: use rediss://",
        ),
        ("redis+cluster://h:1?ssl_cert_reqs=none", "use rediss\\+cluster://"),
        ("rediss://h:1/0?ssl_cert_reqs=maybe", "ssl_cert_reqs=maybe"),
        ("rediss+cluster://h:1?ssl_certfile=/no/such.pem", "the TLS file /no/such.pem .ssl_certfile"),
    ],
)
def test_tls_options_that_cannot_work_are_refused_before_connecting(location: str, message: str) -> None:
    with pytest.raises(StoreLocationError, match=message):
        open_store(location)
