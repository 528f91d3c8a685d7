"""Command line: flags/env → Settings, then serve over the chosen transport, or run the demo.

- `mcp-offload`: serve MCP over stdio (what Claude Desktop launches)
- `mcp-offload --transport http --token T`: a shared service, streamable HTTP at /mcp (`sse`: /sse; `both`)
- `mcp-offload demo`, `import-config [PATH]`, `outputs …`, `stats`: the shell-side commands (this package, one
  module each with its own parser), dispatched from the `SUBCOMMANDS` table when the command line starts with
  their name; the top-level usage and help are generated from that table

Without `--config` (and without `--no-config`) the proxy reads the per-user servers.json if there is one
(`client_config.user_servers_path()`), and says so on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from dataclasses import dataclass

import anyio

from mcp_offload.cli.arg_types import OneLineParser, duration, port, size, workers
from mcp_offload.cli.client_config import user_servers_path
from mcp_offload.cli.event_loop import loop_options
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.cli.ingest_flags import add_ingest_workers_at_flag
from mcp_offload.cli.store_flags import add_redis_store_flags, redis_store_overrides
from mcp_offload.errors import SettingsError
from mcp_offload.logs import log_to_stderr, tag_worker
from mcp_offload.proxy import ProxyConfig, add_proxy_flags, open_proxy, proxy_config_from_args
from mcp_offload.settings import Settings
from mcp_offload.version import __version__
from mcp_offload.web.workers import supervise, worker_slot

log = logging.getLogger("mcp_offload")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A shell-side command: a module with `main(argv) -> int` (its own parser, so `NAME --help` is its help)."""

    name: str
    module: str
    summary: str


# The dispatcher's table: the top-level usage and help list whatever is here.
SUBCOMMANDS: dict[str, Subcommand] = {
    c.name: c
    for c in (
        Subcommand("demo", "mcp_offload.cli.demo", "a worked example with the token bill, over a real stdio server"),
        Subcommand("import-config", "mcp_offload.cli.import_config", "move a client's MCP servers behind mcp-offload"),
        Subcommand("outputs", "mcp_offload.cli.outputs", "list, show, rm, clear, gc stored outputs"),
        Subcommand("stats", "mcp_offload.cli.stats", "what offloading saved, per day and per server/tool"),
        Subcommand("gateway", "mcp_offload.cli.gateway", "the LLM gateway for Anthropic, OpenAI, Gemini API clients"),
        Subcommand("wrap", "mcp_offload.cli.wrap", "run claude, codex or gemini (or any agent) through the gateway"),
    )
}


def _usage() -> str:
    names = ",".join(SUBCOMMANDS)
    return f"mcp-offload [serve] [options]\n       mcp-offload {{{names}}} [--help] ..."


def _epilog() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["commands (each has its own --help):"]
    lines += [f"  {c.name:<{width}}  {c.summary}" for c in SUBCOMMANDS.values()]
    lines.append(f"  {'serve':<{width}}  serve MCP over stdio or HTTP (the default; the options above)")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="mcp-offload",
        usage=_usage(),
        description="MCP server that keeps large tool outputs out of the context window, losslessly. Durations "
        "take units (90s, 15m, 2h, 3d), sizes too (64KB, 1MiB, 1GiB); bare numbers are seconds and bytes.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"mcp-offload {__version__}")
    parser.add_argument("command", nargs="?", choices=["serve"], default="serve", help=argparse.SUPPRESS)
    parser.add_argument(
        "--store",
        help="store directory, redis://host:port/db or redis+cluster://host:port[,host:port…] (env MCP_OFFLOAD_STORE)",
    )
    parser.add_argument(
        "--session",
        default=os.environ.get("MCP_OFFLOAD_SESSION") or None,
        help="stdio: share this named session's outputs (e.g. with a Compactor); env MCP_OFFLOAD_SESSION",
    )
    parser.add_argument("--encoding", help="tiktoken encoding (default o200k_base; env MCP_OFFLOAD_ENCODING)")
    parser.add_argument("--preview-tokens", type=int, help="preview budget in tokens (default 500)")
    parser.add_argument("--read-max-tokens", type=int, help="tokens one read returns at most (default 5000)")
    parser.add_argument(
        "--client-caps",
        metavar="NAME=SIZE,...",
        help="cap answers to what a client shows its model whole, by clientInfo name (* any other client): bytes "
        "(10KB) or tokens (25000tokens); Codex, Claude Code, Gemini CLI, Copilot CLI, Cline, OpenClaw, opencode and "
        "Qwen Code have built-in caps "
        "(env MCP_OFFLOAD_CLIENT_CAPS)",
    )
    parser.add_argument("--max-output-bytes", type=size, metavar="SIZE", help="largest output accepted (256MiB)")
    parser.add_argument("--jq-timeout", type=duration, dest="jq_timeout_s", metavar="DURATION", help="jq limit (10s)")
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=None,
        help="stderr log level (default INFO); logs are JSON lines",
    )
    store = parser.add_argument_group("store lifecycle")
    store.add_argument(
        "--store-ttl", type=duration, dest="store_ttl_s", metavar="DURATION", help="how long an output lives (3d)"
    )
    store.add_argument("--store-session-max-bytes", type=size, metavar="SIZE", help="one session may store (1GiB)")
    store.add_argument("--store-session-max-outputs", type=int, help="outputs one session may store (default 1000)")
    store.add_argument("--store-max-bytes", type=size, metavar="SIZE", help="the whole store may hold (4GiB)")
    store.add_argument("--store-max-outputs", type=int, help="outputs the whole store may hold (default 10000)")
    add_redis_store_flags(parser)
    _add_transport_flags(parser)
    add_proxy_flags(parser)
    parser.add_argument(
        "--no-config",
        action="store_true",
        help=f"do not read the per-user servers.json when --config is not given ({user_servers_path()})",
    )
    return parser


def _add_transport_flags(parser: argparse.ArgumentParser) -> None:
    """Network serving (see http/); the defaults keep it on loopback with DNS-rebinding checks on."""
    net = parser.add_argument_group("network transports")
    net.add_argument(
        "--transport",
        choices=["stdio", "http", "sse", "both"],
        default="stdio",
        help="stdio (default), http (streamable HTTP at /mcp), sse (/sse), both (/mcp and /sse)",
    )
    net.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    net.add_argument("--port", type=port, default=8765, help="port to listen on, 1-65535 (default 8765)")
    net.add_argument(
        "--token",
        action="append",
        default=[],
        help="bearer token clients must send; repeat for several principals (env MCP_OFFLOAD_TOKEN, comma-separated)",
    )
    net.add_argument(
        "--allow-open",
        action="store_true",
        help="allow listening beyond loopback without a token (anyone reaching it can use it)",
    )
    net.add_argument(
        "--allowed-hosts",
        default="",
        help="extra Host header values, comma-separated (reverse proxy names); '*' turns Host/Origin checks off",
    )
    net.add_argument("--allowed-origins", default="", help="extra Origin values, comma-separated")
    net.add_argument("--stateless", action="store_true", help="streamable HTTP without sessions")
    net.add_argument(
        "--json-response",
        action="store_true",
        help="answer each POST with plain JSON, not an SSE stream: less overhead per call, but no progress relayed",
    )
    net.add_argument(
        "--max-body-bytes", type=size, metavar="SIZE", default=32 * 1024 * 1024, help="largest request body (32MiB)"
    )
    net.add_argument("--max-sessions", type=int, default=1000, help="open sessions per transport (default 1000)")
    add_ingest_workers_at_flag(net)
    net.add_argument(
        "--session-idle-timeout",
        type=duration,
        metavar="DURATION",
        default=1800.0,
        help="how long an idle session lives (default 30m)",
    )
    net.add_argument(
        "--workers",
        type=workers,
        default=1,
        help="processes serving the port over the shared store (default 1; with more, --transport http --stateless: "
        "a handshake-era session lives in one process)",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings.from_env().with_overrides(
        store=args.store,
        encoding=args.encoding,
        preview_tokens=args.preview_tokens,
        read_max_tokens=args.read_max_tokens,
        client_caps=args.client_caps,
        max_output_bytes=args.max_output_bytes,
        jq_timeout_s=args.jq_timeout_s,
        store_ttl_s=args.store_ttl_s,
        store_session_max_bytes=args.store_session_max_bytes,
        store_session_max_outputs=args.store_session_max_outputs,
        store_max_bytes=args.store_max_bytes,
        store_max_outputs=args.store_max_outputs,
        ingest_workers_at=args.ingest_workers_at,
        **redis_store_overrides(args),
    )


async def serve_stdio(settings: Settings, proxy: ProxyConfig | None = None, session: str | None = None) -> None:
    from mcp_offload.core.services import build_services

    # One client: the ingest workers start at the first big output (prepared in a thread meanwhile), not at launch.
    # A client starts every stdio server it knows when it starts, and two idle workers cost ~1 s of CPU and ~130 MB
    # each (measured here) per server; a shared HTTP service or gateway starts them at once.
    # The store is opened (and a Redis one checked) before the MCP server is imported: a store that cannot work is
    # refused in one line without that second of CPU.
    services = build_services(settings)
    try:
        from mcp_offload.mcp_server.offload_server import build_server
        from mcp_offload.serve.stdio import stdio_streams
        from mcp_offload.serve.stdio_eras import serve_eras
        from mcp_offload.serve.stdio_shortcut import stdio_shortcut_for

        async with open_proxy(services, proxy) as extensions:
            server = build_server(services, extensions=extensions, session=session)
            async with stdio_streams(tap=stdio_shortcut_for(server, extensions)) as (read, write):
                await serve_eras(server, read, write, server.create_initialization_options())
    finally:
        await services.aclose()


def discover_config(args: argparse.Namespace) -> None:
    """No --config and no --no-config: use the per-user servers.json if it exists, and say so (one line)."""
    if args.config is not None or args.no_config:
        return
    default = user_servers_path()
    if default.is_file():
        args.config = str(default)
        log.info("proxying the servers in %s (--no-config to skip it)", default)


def check_session(session: str | None, transport: str) -> None:
    """`--session NAME` names a shared scope for one stdio client; on HTTP each client has its own scope."""
    if session is None:
        return
    if transport != "stdio":
        raise SettingsError("--session is for the stdio transport; HTTP clients are scoped by session or token")
    from mcp_offload.core.outputs import SessionScope

    try:
        SessionScope.named(session)
    except ValueError as exc:
        raise SettingsError(f"--session: {exc}") from None


def main(argv: list[str] | None = None) -> None:
    """The one entry point: a subcommand's `main`, or the server; the exit status comes from `exit_status`."""
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    argv = command_first(parser, argv)
    if argv and argv[0] in SUBCOMMANDS:
        sys.exit(_run_subcommand(SUBCOMMANDS[argv[0]], argv[1:]))
    args = parser.parse_args(argv)
    args.command_line = argv  # what a `--workers` worker runs
    log_to_stderr(args.log_level or "INFO")  # stdout is the MCP wire on stdio
    sys.exit(exit_status(lambda: run(args)))


def run(args: argparse.Namespace) -> int | None:
    """Serve (stdio or HTTP). Operator errors (a refused network configuration, a bad config file
    or setting) and store errors propagate to `exit_status`."""
    from mcp_offload.core.answer_cap import parse_client_caps
    from mcp_offload.store.location import store_kind

    settings = settings_from_args(args)
    store_kind(settings.store)  # a store location no backend takes: one line, exit 2, before the server's imports
    parse_client_caps(settings.client_caps)  # a bad or too small cap: one line, exit 2, nothing started
    discover_config(args)
    check_session(args.session, args.transport)
    proxy = proxy_config_from_args(args)  # read first: a bad config file fails before anything starts
    if args.transport != "stdio":
        from mcp_offload.serve.http import http_options_from_args, run_http

        options = http_options_from_args(args)
        slot = worker_slot()
        if slot is not None:
            tag_worker(slot.index)
        elif getattr(args, "workers", 1) > 1:  # the parent: it binds the port and runs the workers (web/workers.py)
            command = [sys.executable, "-m", "mcp_offload", *(getattr(args, "command_line", None) or sys.argv[1:])]
            return supervise(command, args.workers, options.host, options.port, options.shutdown_grace_s)
        anyio.run(run_http, settings, options, proxy, slot, backend_options=loop_options())
        return None
    if getattr(args, "workers", 1) > 1:
        raise SettingsError("--workers is for the HTTP transports (--transport http): stdio serves one client")
    anyio.run(serve_stdio, settings, proxy, args.session, backend_options=loop_options())
    return None


def command_first(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`mcp-offload --store X outputs list` → `mcp-offload outputs --store X list`: options written before a
    subcommand's name move after it when the subcommand takes them; one that it does not take is a one-line error
    (exit 2) naming the command, not argparse's `invalid choice: 'outputs'`. Anything else is left as it is."""
    leading: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        name, has_value, _ = argv[i].partition("=")
        action = parser._option_string_actions.get(name)  # argparse keeps no public map of option → action
        if action is None or name in ("-h", "--help", "-V", "--version"):
            return argv  # an unknown option or help: the server's parser says what it says
        takes_value = action.nargs != 0 and not has_value
        leading += argv[i : i + 1 + takes_value]
        i += 1 + takes_value
    if not leading or i >= len(argv) or argv[i] not in SUBCOMMANDS:
        return argv
    command = SUBCOMMANDS[argv[i]]
    taken = _options_of(command)
    if taken is not None:
        for token in leading:
            name = token.partition("=")[0]
            if token.startswith("-") and name in parser._option_string_actions and name not in taken:
                parser.exit(
                    2,
                    f"mcp-offload: error: {name} does not apply to `{command.name}`; its options follow its name "
                    f"(see mcp-offload {command.name} --help)\n",
                )
    return [argv[i], *leading, *argv[i + 1 :]]


def _options_of(command: Subcommand) -> frozenset[str] | None:
    """The option strings a subcommand's own parser takes right after its name (None: it does not say)."""
    build = getattr(importlib.import_module(command.module), "parser", None)
    if build is None:
        return None
    own: argparse.ArgumentParser = build()
    return frozenset(own._option_string_actions)


def _run_subcommand(command: Subcommand, argv: list[str]) -> int:
    """Run a shell-side command; its output may go to a pipe that closes early (`stats --json | head`)."""
    log_to_stderr("WARNING")
    module = importlib.import_module(command.module)

    def command_then_flush() -> int:
        code: int = module.main(argv)
        sys.stdout.flush()  # a closed pipe shows here at the latest, inside exit_status
        return code

    return exit_status(command_then_flush)
