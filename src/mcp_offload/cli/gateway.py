"""`mcp-offload gateway`: the LLM gateway (see mcp_offload.gateway), a reverse proxy for the Anthropic Messages,
OpenAI Chat Completions, Responses and Gemini APIs that keeps large tool results out of the history, cache-safely.

    mcp-offload gateway [--host 127.0.0.1] [--port 8788] [--anthropic-upstream URL] [--openai-upstream URL]
                        [--gemini-upstream URL] [--NAME-upstream URL …]
                        [--store DIR|redis://…] [--retrieval transparent|visible]
                        [--threshold-tokens N] [--workers N]

Point clients at it: `ANTHROPIC_BASE_URL=http://127.0.0.1:8788`, `OPENAI_BASE_URL=http://127.0.0.1:8788/v1`,
`GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8788` (Gemini CLI; `google-genai`: `http_options={"base_url": …}`).
Like the HTTP service it binds loopback by default, refuses a non-loopback address without a token (unless
--allow-open) and checks Host/Origin against loopback names plus --allowed-hosts / --allowed-origins.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import anyio

from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cli.arg_types import http_url, port, workers
from mcp_offload.cli.event_loop import loop_options
from mcp_offload.cli.ingest_flags import add_ingest_workers_at_flag
from mcp_offload.cli.own_parser import main_on_own_parser, own_parser
from mcp_offload.cli.store_flags import add_redis_store_flags, redis_store_overrides
from mcp_offload.gateway.options import DEFAULT_PORT, GatewayOptions, LoopLimits
from mcp_offload.gateway.upstream import ProviderConfig
from mcp_offload.logs import log_to_stderr, tag_worker
from mcp_offload.providers.registry import PROVIDERS
from mcp_offload.settings import Settings
from mcp_offload.web.exposure import exposure_from_args
from mcp_offload.web.host_check import exposure_rules
from mcp_offload.web.workers import supervise, worker_slot

TOKEN_ENV = "MCP_OFFLOAD_GATEWAY_TOKEN"
_DEFAULT_POLICY, _DEFAULT_LIMITS, _DEFAULT_UPSTREAM = RewritePolicy(), LoopLimits(), ProviderConfig()


def add_parser(subparsers: Any) -> argparse.ArgumentParser:  # argparse's _SubParsersAction is private
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "gateway", help="the LLM gateway (Anthropic / OpenAI / Gemini APIs)", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port, default=DEFAULT_PORT, help=f"port to listen on, 1-65535 (default {DEFAULT_PORT})"
    )
    for provider in PROVIDERS.values():  # one flag per provider, from its package (`Provider.upstream`)
        setting = provider.upstream
        default = f"default {setting.default}" if setting.default else "no default: its calls need it"
        parser.add_argument(
            setting.flag,
            type=http_url,
            default=os.environ.get(setting.env, setting.default),
            help=f"{setting.help} ({default}; env {setting.env})",
        )
    parser.add_argument(
        "--store",
        help="store directory, redis://host:port/db or redis+cluster://host:port[,host:port…] (env MCP_OFFLOAD_STORE)",
    )
    add_redis_store_flags(parser)
    parser.add_argument(
        "--retrieval",
        choices=["transparent", "visible"],
        default="transparent",
        help="transparent: the gateway answers the model's retrieval calls itself (default); visible: "
        "the calls go to the client, whose own mcp-offload MCP server answers them",
    )
    parser.add_argument(
        "--threshold-tokens",
        type=int,
        default=_DEFAULT_POLICY.threshold_tokens,
        help=f"tool results of this many tokens or more are offloaded (default {_DEFAULT_POLICY.threshold_tokens})",
    )
    parser.add_argument(
        "--fail-closed",
        action="store_true",
        help="answer 503 when the store is down (default: forward the original request)",
    )
    parser.add_argument(
        "--max-loops",
        type=int,
        default=_DEFAULT_LIMITS.max_loops,
        help=f"retrieval round trips per turn before a last call without tools (default {_DEFAULT_LIMITS.max_loops})",
    )
    parser.add_argument(
        "--ping-interval",
        type=float,
        default=_DEFAULT_LIMITS.ping_interval_s,
        help="seconds between keep-alives while the gateway runs retrieval calls (default 5)",
    )
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=_DEFAULT_UPSTREAM.read_timeout_s,
        help="seconds an upstream may stay silent (default 600)",
    )
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        help=f"token clients must send as x-mcp-offload-token (or Proxy-Authorization: Bearer); "
        f"repeat for several (env {TOKEN_ENV}, comma-separated)",
    )
    parser.add_argument("--allow-open", action="store_true", help="allow listening beyond loopback without a token")
    parser.add_argument(
        "--allowed-hosts",
        default="",
        help="extra Host header values, comma-separated; '*' turns Host/Origin checks off",
    )
    parser.add_argument("--allowed-origins", default="", help="extra Origin values, comma-separated")
    parser.add_argument(
        "--max-body-bytes", type=int, default=32 * 1024 * 1024, help="largest request body (default 32 MiB)"
    )
    parser.add_argument(
        "--gateway-cache-breakpoints",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add Anthropic cache breakpoints to requests that set no cache_control (default on; "
        "env MCP_OFFLOAD_GATEWAY_CACHE_BREAKPOINTS)",
    )
    parser.add_argument(
        "--workers",
        type=workers,
        default=1,
        help="processes serving the port over the shared store (default 1; up to one per core: see docs/gateway.md)",
    )
    parser.add_argument(
        "--gateway-max-big-turns",
        type=int,
        default=None,
        metavar="N",
        help="requests with a body of 512 KiB or more in progress at once; one more is refused with the API's "
        "overloaded error and Retry-After (default 8; env MCP_OFFLOAD_GATEWAY_MAX_BIG_TURNS)",
    )
    add_ingest_workers_at_flag(parser)
    parser.add_argument("--log-level", default="INFO", help="stderr log level (default INFO: one line per request)")
    parser.set_defaults(run=run, command_line=None)
    return parser


def options_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> GatewayOptions:
    http = exposure_from_args(args, TOKEN_ENV, environ)
    rules = exposure_rules(http.host, http.allowed_hosts, http.allowed_origins)  # the HTTP service's rules
    return GatewayOptions(
        host=args.host,
        port=args.port,
        tokens=http.tokens,
        allowed_hosts=rules.hosts or (),
        allowed_origins=("*",) if rules.origins is None else rules.origins,
        max_body_bytes=args.max_body_bytes,
        upstream=ProviderConfig(
            bases={name: getattr(args, provider.upstream.dest) for name, provider in PROVIDERS.items()},
            read_timeout_s=args.upstream_timeout,
        ),
        policy=RewritePolicy(
            threshold_tokens=args.threshold_tokens, retrieval=args.retrieval, fail_closed=args.fail_closed
        ),
        limits=LoopLimits(max_loops=args.max_loops, ping_interval_s=args.ping_interval),
    )


def settings_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Settings:
    """The environment's settings with what the flags set (a flag left out keeps the environment's value)."""
    return Settings.from_env(environ).with_overrides(
        store=args.store,
        gateway_cache_breakpoints=args.gateway_cache_breakpoints,
        gateway_max_big_turns=args.gateway_max_big_turns,
        ingest_workers_at=args.ingest_workers_at,
        **redis_store_overrides(args),
    )


def run(args: argparse.Namespace) -> int:
    log_to_stderr(args.log_level)  # JSON lines on stderr, like every other command
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # the gateway's own line per request says more
    settings = settings_from_args(args)
    options = options_from_args(args)
    slot = worker_slot()
    if slot is not None:
        tag_worker(slot.index)
    elif args.workers > 1:  # the parent: it binds the port and runs the workers (web/workers.py)
        command = [sys.executable, "-m", "mcp_offload", *(args.command_line or sys.argv[1:])]
        return supervise(command, args.workers, options.host, options.port, options.shutdown_grace_s)
    from mcp_offload.gateway.run import run_gateway  # the server itself: not imported for --help or a refusal

    anyio.run(run_gateway, settings, options, slot, backend_options=loop_options())
    return 0


def parser() -> argparse.ArgumentParser:
    """`mcp-offload gateway`'s own parser (its options are what the dispatcher lets precede the command's name)."""
    return own_parser(add_parser)


def main(argv: list[str]) -> int:
    def run_as_typed(args: argparse.Namespace) -> int:
        args.command_line = ["gateway", *argv]  # what a `--workers` worker runs
        return run(args)

    return main_on_own_parser(argv, add_parser, run_as_typed, "mcp-offload gateway")
