"""Every knob in one frozen dataclass, with its default and what it does.

`Settings.from_env()` reads `MCP_OFFLOAD_*` environment variables; the CLI overrides them with flags.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode

import platformdirs

from mcp_offload.errors import SettingsError
from mcp_offload.units import parse_duration, parse_size


def default_store_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-offload", appauthor=False)) / "store"


@dataclass(frozen=True, slots=True)
class Settings:
    # where outputs live: a directory (filesystem backend) or redis://host:port/db
    store: str = ""  # "": the per-user data directory (~/.local/share/mcp-offload/store on Linux)
    # tokens: tiktoken encoding name
    encoding: str = "o200k_base"
    # outputs up to this many chars get an exact token count; larger ones a sampled one, flagged approximate
    tokens_exact_chars: int = 262_144
    # offload: content larger than this (bytes) is refused
    max_output_bytes: int = 256 * 1024 * 1024
    # preview budget, in tokens
    preview_tokens: int = 500
    # one read returns at most this many tokens
    read_max_tokens: int = 5000
    # MCP answers cut to what each client shows its model whole, besides the built-in caps (Codex, Claude Code, Gemini
    # CLI, Copilot CLI, Cline, OpenClaw, opencode, Qwen Code: docs/mcp-server.md): NAME=SIZE pairs, comma-separated,
    # NAME a clientInfo name or * for any other client, SIZE bytes (10KB), tokens (25000tokens) or both
    client_caps: str = ""
    # search: defaults and hard caps
    search_max_results_cap: int = 500  # the most hits one search returns, whatever max_results asks
    search_line_chars: int = 300  # a hit's line is cut to this many chars around the match
    search_max_pattern_chars: int = 4096  # the longest pattern accepted
    search_time_budget_s: float = 10.0  # a search stops here and says its counts are not exact
    # jq: per-query time limit, output cap, program size cap, worker memory cap
    jq_timeout_s: float = 10.0  # one query's time limit (SQL's too)
    jq_max_output_chars: int = 100_000  # an answer is cut here, saying so (SQL's too)
    jq_max_program_chars: int = 10_000  # the longest program accepted
    jq_memory_mb: int = 2048  # per worker process
    jq_workers: int = 2  # jq worker processes
    # worker processes for the CPU work of storing outputs of 256 KiB or more (tokenizing, indexing, previews), so that
    # one client's big output never holds the event loop or the GIL of a shared server; 0: a thread of this process
    ingest_workers: int = 2
    # when the HTTP service and the gateway start their ingest workers: "launch" (a shared server: no client's first
    # big output is prepared in the serving process) or "first-big-output" (one client's own server: prepared in a
    # thread until they run; an idle worker costs ~1 s of CPU to start and ~130 MB); a stdio server starts them at
    # its first big output
    ingest_workers_at: str = "launch"
    # the libjq the jq workers load: "auto" = the -O2 build of jq.py's own libjq that .ci/build-libjq.sh caches, when
    # present (same version, ~3x faster parsing), else jq.py's bundled -O0 one; "" = always the bundled one; or a path
    jq_library: str = "auto"
    # jq workers keep parsed inputs for repeat queries (parsed JSON is ~12x its text): per worker, at most
    jq_cache_inputs: int = 4  # outputs (0: no cache)
    jq_cache_input_mb: int = 256  # MB of their JSON text
    jq_cache_memory_mb: int = 512  # MB of parsed values (counted in jq_memory_mb)
    # SQL over tabular outputs (DuckDB worker, retrieve/sql/): time limit and output cap as jq's (jq_timeout_s,
    # jq_max_output_chars); DuckDB's memory limit and threads, the query size cap
    sql_memory_mb: int = 1024  # DuckDB's memory limit
    sql_threads: int = 1  # DuckDB's threads
    sql_max_query_chars: int = 10_000  # the longest query accepted
    # store lifecycle (see store/lifecycle.py): time to live, per-session and global quotas, sweep period
    store_ttl_s: float = 3 * 24 * 3600.0  # an output lives this long from its offload
    store_session_max_bytes: int = 1024**3  # one session may store (least recently used evicted first)
    store_session_max_outputs: int = 1000  # outputs one session may store
    store_max_bytes: int = 4 * 1024**3  # the whole store may hold
    store_max_outputs: int = 10_000  # outputs the whole store may hold
    store_sweep_interval_s: float = 600.0  # how often expired outputs and crashed writers' debris are swept
    # Redis (one node or a cluster): a put returns once a replica acknowledged the output (WAIT), when its master
    # has one; after this long without an ack the put fails and nothing is stored. 0: never wait
    store_replica_ack_timeout_s: float = 2.0
    # Redis Cluster: retrieval reads outputs from replicas too (spreading the read load); a replica serves an output
    # only once its offload's WAIT was acknowledged, and a read falls back to the master when a replica lacks it
    store_read_from_replicas: bool = False
    # Redis over TLS (rediss://, rediss+cluster://); each is also the URL's query option named after it
    store_tls_ca_file: str = ""  # the CA (PEM) that signed the server's certificate; "": the system's (ssl_ca_certs)
    store_tls_cert_reqs: str = "required"  # check the server's certificate: required, optional, none (ssl_cert_reqs)
    store_tls_cert_file: str = ""  # a client certificate (PEM), for a server with tls-auth-clients (ssl_certfile)
    store_tls_key_file: str = ""  # its private key (PEM) (ssl_keyfile)
    # names given to outputs
    max_name_chars: int = 200  # longer names are cut
    # the gateway adds Anthropic cache breakpoints (system end, previous turn's end, last message) to Messages
    # requests that set no cache_control at all, so plain SDK apps get prompt caching; false: forward them unmarked
    gateway_cache_breakpoints: bool = True
    # API calls with a large body (512 KiB or more) in progress at once on the gateway: as many as there are ingest
    # workers run, the others wait for one; one more is refused at once with the API's own "overloaded" answer
    # (Anthropic 529, OpenAI 503, Gemini 503 UNAVAILABLE) and Retry-After, so a burst never piles up without end
    gateway_max_big_turns: int = 8

    def __post_init__(self) -> None:
        if self.gateway_max_big_turns < 1:
            raise SettingsError(
                f"gateway_max_big_turns (--gateway-max-big-turns, MCP_OFFLOAD_GATEWAY_MAX_BIG_TURNS) is "
                f"{self.gateway_max_big_turns}: it is 1 or more"
            )
        if self.ingest_workers_at not in INGEST_WORKERS_AT:
            raise SettingsError(
                f"ingest_workers_at (--ingest-workers-at, MCP_OFFLOAD_INGEST_WORKERS_AT) is "
                f"{self.ingest_workers_at!r}: it is one of {', '.join(INGEST_WORKERS_AT)}"
            )
        if self.store_tls_cert_reqs not in TLS_CERT_REQS:
            raise SettingsError(
                f"store_tls_cert_reqs (--store-tls-cert-reqs, MCP_OFFLOAD_STORE_TLS_CERT_REQS) is "
                f"{self.store_tls_cert_reqs!r}: it is one of {', '.join(TLS_CERT_REQS)}"
            )

    def store_location(self) -> str:
        """Where the store is: `store`, or the per-user directory; a Redis URL carries the TLS settings in its
        query (redis-py's names), so every record kept beside the outputs connects the same way."""
        location = self.store or str(default_store_dir())
        tls = {query: value for name, query in _TLS_QUERY if (value := getattr(self, name)) != _DEFAULT_TLS[name]}
        return _with_query(location, tls) if tls else location

    def with_overrides(self, **changes: object) -> Self:
        kept: dict[str, Any] = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **kept)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Self:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}  # each value coerced to its field's type by _coerce
        for f in fields(cls):
            raw = env.get(f"MCP_OFFLOAD_{f.name.upper()}")
            if raw is None:
                continue
            values[f.name] = _coerce(f.type, raw, f.name)
        return cls(**values)


TLS_CERT_REQS = ("required", "optional", "none")
INGEST_WORKERS_AT = ("launch", "first-big-output")
_TLS_QUERY = (  # a TLS setting and the query option of a Redis URL (redis-py's) that it sets
    ("store_tls_ca_file", "ssl_ca_certs"),
    ("store_tls_cert_reqs", "ssl_cert_reqs"),
    ("store_tls_cert_file", "ssl_certfile"),
    ("store_tls_key_file", "ssl_keyfile"),
)
_DEFAULT_TLS = {f.name: f.default for f in fields(Settings) if f.name.startswith("store_tls_")}


def _setting_names(name: str) -> str:
    return f"--{name.replace('_', '-')} / MCP_OFFLOAD_{name.upper()}"


def _with_query(location: str, options: dict[str, str]) -> str:
    """`location` (a Redis URL) with `options` in its query; `SettingsError` for a location that is no URL (a
    directory store has no TLS) or whose query already says otherwise."""
    names = {query: name for name, query in _TLS_QUERY}
    if "://" not in location:
        first = names[next(iter(options))]
        raise SettingsError(
            f"{_setting_names(first)} is set, but the store is the directory {location}: the TLS settings are for "
            "a Redis store over TLS (rediss://…, rediss+cluster://…)"
        )
    base, _, query = location.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    given = dict(pairs)
    for key, value in options.items():
        if key in given and given[key] != value:
            raise SettingsError(
                f"the store URL says {key}={given[key]} but {_setting_names(names[key])} says {value}: say it once"
            )
    pairs += [(key, value) for key, value in options.items() if key not in given]
    return f"{base}?{urlencode(pairs, safe='/')}"


def _coerce(annotation: object, raw: str, name: str) -> object:
    """An environment value as its field's type; sizes (`*_bytes`) and durations (`*_s`) take units, like their
    flags (`3d`, `1GiB`)."""
    kind = str(annotation)
    try:
        if kind == "int" and name.endswith("_bytes"):
            return parse_size(raw)
        if kind == "float" and name.endswith("_s"):
            return parse_duration(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "bool":
            return raw.strip().lower() in {"1", "true", "yes", "on"}
    except ValueError as exc:
        if name.endswith(("_bytes", "_s")):
            raise SettingsError(f"MCP_OFFLOAD_{name.upper()}: {exc}") from None
        raise SettingsError(f"MCP_OFFLOAD_{name.upper()}={raw!r} is not a valid {kind}") from None
    return raw
