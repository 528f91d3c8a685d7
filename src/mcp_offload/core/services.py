"""The services a server instance shares: settings, the store, the token counter, the jq and SQL runners, the
savings record.

Built once per process by the command line or a transport (or by a test) and handed to the tools and the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from mcp_offload.core.ingest_pool import IngestPool
from mcp_offload.errors import SettingsError
from mcp_offload.retrieve.jq_library import resolve_libjq
from mcp_offload.retrieve.jq_pool import JqRunner
from mcp_offload.retrieve.sql.runner import IDLE_S, SqlRunner
from mcp_offload.savings.record import SavingsRecord
from mcp_offload.settings import Settings
from mcp_offload.store.base import Store
from mcp_offload.tokens import TokenCounter


class Attachment(Protocol):
    """A resource a front end opens lazily beside the store (e.g. the gateway's decision record)."""

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class Services:
    settings: Settings
    store: Store
    tokens: TokenCounter
    jq: JqRunner
    savings: SavingsRecord = field(default_factory=SavingsRecord)  # the durable savings record (savings/)
    sql: SqlRunner = field(default_factory=lambda: sql_runner(Settings()))  # started on the first SQL query
    # worker processes for the CPU work of big offloads (started at the first one, or by a server at start)
    ingest: IngestPool = field(default_factory=lambda: IngestPool(Settings(), 0))
    attachments: dict[str, Attachment] = field(default_factory=dict)  # front ends' resources, closed with these

    async def aclose(self) -> None:
        attached, self.attachments = list(self.attachments.values()), {}
        for resource in attached:
            await resource.aclose()
        await self.savings.aclose()
        await self.sql.aclose()
        await self.ingest.aclose()
        await self.jq.aclose()
        await self.store.aclose()


def build_services(settings: Settings) -> Services:
    """Open the store and the savings record beside it, load the tokenizer (offline-safe) and prepare the jq
    worker pool."""
    from mcp_offload.savings import open_savings
    from mcp_offload.store import open_store
    from mcp_offload.store.lifecycle import StoreLimits
    from mcp_offload.tokens import load_counter

    try:
        tokens = load_counter(settings.encoding)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    return Services(
        settings=settings,
        store=open_store(
            settings.store_location(),
            limits=StoreLimits.from_settings(settings),
            replica_ack_timeout_s=settings.store_replica_ack_timeout_s,
            read_from_replicas=settings.store_read_from_replicas,
        ),
        tokens=tokens,
        jq=JqRunner(
            workers=settings.jq_workers,
            timeout_s=settings.jq_timeout_s,
            max_output_chars=settings.jq_max_output_chars,
            max_program_chars=settings.jq_max_program_chars,
            memory_mb=settings.jq_memory_mb,
            cache_inputs=settings.jq_cache_inputs,
            cache_input_mb=settings.jq_cache_input_mb,
            cache_memory_mb=settings.jq_cache_memory_mb,
            libjq=resolve_libjq(settings.jq_library),
        ),
        savings=open_savings(settings.store_location()),
        sql=sql_runner(settings),
        ingest=IngestPool(settings, settings.ingest_workers),
    )


def sql_runner(settings: Settings, *, idle_s: float = IDLE_S) -> SqlRunner:
    return SqlRunner(
        timeout_s=settings.jq_timeout_s,
        memory_mb=settings.sql_memory_mb,
        threads=settings.sql_threads,
        max_output_chars=settings.jq_max_output_chars,
        max_query_chars=settings.sql_max_query_chars,
        idle_s=idle_s,
    )
