"""What a store location string names: a filesystem directory, one Redis (or Valkey), or a Redis Cluster.

The one rule for `--store` / MCP_OFFLOAD_STORE, asked by the store, the savings record and the decision record alike:

    redis://  rediss://  valkey://  valkeys://  unix://          one Redis node (`RedisStore`, single-node layout)
    redis+cluster://host:port[,host:port…]  rediss+cluster://…    a Redis Cluster, through any of the seed nodes
    (valkey+cluster:// and valkeys+cluster:// are aliases)
    anything else without a scheme                                a directory (`FilesystemStore`)

A location that looks like a URL (`word://…`) with any other scheme is a mistake, never a directory: it is refused
before anything is created (a `--store foo://x` must not leave a folder named `foo:` behind).
"""

from __future__ import annotations

import re
from typing import Literal

from mcp_offload.errors import SettingsError

StoreKind = Literal["fs", "redis", "cluster"]

REDIS_SCHEMES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://", "valkey+cluster://", "valkeys+cluster://")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
KNOWN = "a directory, redis://…, rediss://…, valkey://…, unix://…, or redis+cluster://host:port[,host:port…]"


class StoreLocationError(SettingsError):
    """A store location that names no store this program knows (an unknown URL scheme, a malformed cluster URL).
    Reported at startup, before anything is created; the CLI exits with status 1."""

    exit_status = 1


def store_kind(location: str) -> StoreKind:
    """Which backend `location` names; `StoreLocationError` for a URL of a scheme no backend knows."""
    if location.startswith(REDIS_SCHEMES):
        return "redis"
    if location.startswith(CLUSTER_SCHEMES):
        return "cluster"
    found = _URL.match(location)
    if found:
        raise StoreLocationError(
            f"the store location {location!r} has the unknown scheme '{found.group(1)}://'; nothing was created. "
            f"A store is {KNOWN}"
        )
    return "fs"


def is_redis_location(location: str) -> bool:
    """A Redis or Redis Cluster URL (else a directory, or an error for an unknown scheme)."""
    return store_kind(location) != "fs"
