"""The Redis store's connection flags, shared by every command that opens a store (serve, gateway, outputs, stats).

    add_redis_store_flags(parser)   the "Redis store" group: replica acks, reads from replicas, TLS
    redis_store_overrides(args)     what they set, for `Settings.with_overrides` (a flag left out keeps the env's value)

Each flag is its setting's (`--store-tls-ca-file` is `store_tls_ca_file`, env MCP_OFFLOAD_STORE_TLS_CA_FILE).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp_offload.cli.arg_types import duration
from mcp_offload.settings import TLS_CERT_REQS

SETTINGS = (
    "store_replica_ack_timeout_s",
    "store_read_from_replicas",
    "store_tls_ca_file",
    "store_tls_cert_reqs",
    "store_tls_cert_file",
    "store_tls_key_file",
)


def add_redis_store_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Redis store (redis://, rediss://, redis+cluster://, rediss+cluster://)")
    group.add_argument(
        "--store-replica-ack-timeout",
        type=duration,
        dest="store_replica_ack_timeout_s",
        metavar="DURATION",
        default=argparse.SUPPRESS,
        help="an offload waits this long for a replica's ack, else fails with nothing stored (2s; 0: never waits)",
    )
    group.add_argument(
        "--store-read-from-replicas",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help="Redis Cluster: retrieval reads outputs from replicas too (default off)",
    )
    group.add_argument(
        "--store-tls-ca-file",
        metavar="PEM",
        default=argparse.SUPPRESS,
        help="the CA that signed the server's certificate (default: the system's CAs)",
    )
    group.add_argument(
        "--store-tls-cert-reqs",
        choices=TLS_CERT_REQS,
        default=argparse.SUPPRESS,
        help="check the server's certificate: required (default), optional, none (not at all)",
    )
    group.add_argument(
        "--store-tls-cert-file",
        metavar="PEM",
        default=argparse.SUPPRESS,
        help="client certificate, for a server that asks for one",
    )
    group.add_argument("--store-tls-key-file", metavar="PEM", default=argparse.SUPPRESS, help="its private key")


def redis_store_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The Redis store settings the flags set (the ones given; the others keep their environment's value)."""
    return {name: getattr(args, name) for name in SETTINGS if hasattr(args, name)}
