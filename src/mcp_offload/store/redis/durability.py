"""Durable when it says so: a publish is acknowledged by at least one replica (`WAIT 1 <timeout>`) before `put`
returns, whenever the master holding the output has a replica.

WAIT counts the writes of the *connection* it is sent on, so the publish script and the WAIT go out in one pipeline
on one connection to the master of the session's slot. The outcomes:

- acknowledged by a replica: stored (a failover of that master keeps it: the promoted replica has it);
- the master has no replica at all (a single Redis, or a master whose replica died or was promoted away after a
  failover): stored on the master alone; said once at start, and once per master when it loses its last replica,
  and once again when one is back (writes never stop for want of a replica);
- the master has a replica that did not acknowledge within the timeout: `ReplicaLag`; the caller removes the output
  and reports "nothing stored", since a failover now could lose it.

Whether a master has a replica is asked with `INFO replication` (connected_slaves) and remembered for
`RECHECK_S`, so a replica-less master costs no WAIT timeout per put.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript

from mcp_offload.store.failures import is_driver_error

if TYPE_CHECKING:
    from mcp_offload.store.location import AsyncRedis

log = logging.getLogger(__name__)

RECHECK_S = 5.0


class ReplicaLag(Exception):
    """The master has a replica, but it did not acknowledge the write within the timeout."""


class ReplicaAcks:
    """Run a write script and, when its master has a replica, WAIT for one acknowledgement on the same connection."""

    def __init__(self, client: AsyncRedis, *, cluster: bool, timeout_ms: int) -> None:
        self._client = client
        self._cluster = cluster
        self.timeout_ms = timeout_ms
        self._known: dict[str, tuple[bool, float]] = {}  # master -> (has a replica, when asked)

    def announce(self, replicas: dict[str, bool]) -> None:
        """Say once, at start, which masters run without a replica (`replicas`: what the startup check found)."""
        if self.timeout_ms <= 0 or not replicas:
            return
        now = time.monotonic()
        self._known.update({name: (has, now) for name, has in replicas.items()})
        lonely = sorted(name for name, has in replicas.items() if not has)
        if lonely and len(lonely) == len(replicas):  # one Redis without replica: a fact of the setup, not a fault
            log.info(
                "redis store: no replica, so an output is stored on the master alone (a lost master loses what it "
                "held); with a replica, every offload waits until one has it"
            )
        elif lonely:
            log.warning("redis store: master(s) %s run without a replica ack until one is back", ", ".join(lonely))

    def _node(self, key: str) -> Any:
        if isinstance(self._client, redis.asyncio.RedisCluster):
            return self._client.get_node_from_key(key)
        return None

    async def _has_replica(self, name: str, node: Any, *, fresh: bool = False) -> bool:
        known = self._known.get(name)
        if known is not None and not fresh and time.monotonic() - known[1] < RECHECK_S:
            return known[0]
        try:
            if node is not None:
                info: dict[str, Any] = await self._client.info("replication", target_nodes=node)
            else:
                info = await self._client.info("replication")
            has = int(info.get("connected_slaves", 0)) > 0
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            has = False if known is None else known[0]
        if not has and (known is None or known[0]):  # a master that lost its replica, or a new one (a failover)
            log.warning("redis store: master %s has no replica: running without a replica ack until one is back", name)
        elif known is not None and not known[0] and has:
            log.warning("redis store: master %s has a replica again; offloads wait for its ack", name)
        self._known[name] = (has, time.monotonic())
        return has

    async def run(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """`script(keys, args)` on the master of `keys[0]`; `ReplicaLag` when its replica did not acknowledge."""
        node = self._node(keys[0])
        name = node.name if node is not None else "redis"
        if self.timeout_ms <= 0 or not await self._has_replica(name, node):
            return await script(keys=list(keys), args=list(args))
        result: Any = None
        acks: Any = None
        for _ in range(2):
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
                if node is not None:
                    pipe.execute_command("WAIT", 1, self.timeout_ms, target_nodes=node)
                else:
                    pipe.execute_command("WAIT", 1, self.timeout_ms)
                result, acks = await pipe.execute(raise_on_error=False)
            if not isinstance(result, redis.exceptions.NoScriptError):
                break
            await self._client.script_load(script.script)  # a promoted replica has no scripts cached
        for found in (result, acks):
            if isinstance(found, Exception):
                raise found
        if int(acks) >= 1 or result != b"ok":
            return result
        if await self._has_replica(name, node, fresh=True):
            raise ReplicaLag(name)
        return result  # the replica went away (said once by _has_replica): stored on the master alone
