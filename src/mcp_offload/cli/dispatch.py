"""Command line: flags/env → Settings, then serve over the chosen transport, or run the demo.

- `mcp-offload`: serve MCP over stdio (what Claude Desktop launches)
- `mcp-offload --transport http --token T`: a shared service, streamable HTTP at /mcp (`sse`: /sse; `both`)
- `mcp-offload demo`: a worked example with token savings, over a real stdio subprocess
- `mcp-offload import-config [PATH]`, `mcp-offload outputs …`, `mcp-offload stats`: the shell-side commands
  (this package), dispatched when the command line starts with their name

Without `--config` (and without `--no-config`) the proxy reads the per-user servers.json if there is one
(`client_config.user_servers_path()`), and says so on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import anyio

from mcp_offload.cli.client_config import user_servers_path
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.core.api import SessionScope
from mcp_offload.errors import SettingsError
from mcp_offload.proxy import ProxyConfig, add_proxy_flags, open_proxy, proxy_config_from_args
from mcp_offload.settings import Settings
from mcp_offload.version import __version__

log = logging.getLogger("mcp_offload")

SUBCOMMANDS = ("import-config", "outputs", "stats", "gateway")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-offload",
        description="MCP server that keeps large tool outputs out of the context window, losslessly.",
        epilog="other commands: `mcp-offload import-config --help` (move a client's servers behind mcp-offload), "
        "`mcp-offload outputs --help` (list, show, rm, clear, gc stored outputs), "
        "`mcp-offload stats --help` (what offloading saved, per day and tool), "
        "`mcp-offload gateway --help` (the LLM gateway for Anthropic / OpenAI API clients)",
    )
    parser.add_argument("--version", action="version", version=f"mcp-offload {__version__}")
    parser.add_argument("command", nargs="?", choices=["serve", "demo"], default="serve")
    parser.add_argument("--store", help="store directory or redis://host:port/db (env MCP_OFFLOAD_STORE)")
    parser.add_argument(
        "--session",
        default=os.environ.get("MCP_OFFLOAD_SESSION") or None,
        help="stdio: share this named session's outputs (e.g. with a Compactor); env MCP_OFFLOAD_SESSION",
    )
    parser.add_argument("--encoding", help="tiktoken encoding (default o200k_base; env MCP_OFFLOAD_ENCODING)")
    parser.add_argument("--preview-tokens", type=int, help="preview budget in tokens (default 500)")
    parser.add_argument("--read-max-tokens", type=int, help="tokens one read returns at most (default 5000)")
    parser.add_argument("--max-output-bytes", type=int, help="largest output accepted (default 256 MiB)")
    parser.add_argument("--jq-timeout", type=float, dest="jq_timeout_s", help="jq time limit in seconds (default 10)")
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    store = parser.add_argument_group("store lifecycle")
    store.add_argument("--store-ttl", type=float, dest="store_ttl_s", help="seconds an output lives (default 3 days)")
    store.add_argument("--store-session-max-bytes", type=int, help="bytes one session may store (default 1 GiB)")
    store.add_argument("--store-session-max-outputs", type=int, help="outputs one session may store (default 1000)")
    store.add_argument("--store-max-bytes", type=int, help="bytes the whole store may hold (default 4 GiB)")
    store.add_argument("--store-max-outputs", type=int, help="outputs the whole store may hold (default 10000)")
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
    net.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
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
    net.add_argument("--max-body-bytes", type=int, default=32 * 1024 * 1024, help="largest request body (32 MiB)")
    net.add_argument("--max-sessions", type=int, default=1000, help="open sessions per transport (default 1000)")
    net.add_argument(
        "--session-idle-timeout",
        type=float,
        default=1800.0,
        help="seconds before an idle session expires (default 1800)",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings.from_env().with_overrides(
        store=args.store,
        encoding=args.encoding,
        preview_tokens=args.preview_tokens,
        read_max_tokens=args.read_max_tokens,
        max_output_bytes=args.max_output_bytes,
        jq_timeout_s=args.jq_timeout_s,
        store_ttl_s=args.store_ttl_s,
        store_session_max_bytes=args.store_session_max_bytes,
        store_session_max_outputs=args.store_session_max_outputs,
        store_max_bytes=args.store_max_bytes,
        store_max_outputs=args.store_max_outputs,
    )


async def serve_stdio(settings: Settings, proxy: ProxyConfig | None = None, session: str | None = None) -> None:
    from mcp_offload.core.services import build_services
    from mcp_offload.serve.stdio import stdio_streams
    from mcp_offload.server.offload_server import build_server

    services = build_services(settings)
    try:
        async with open_proxy(services, proxy) as extensions:
            server = build_server(services, extensions=extensions, session=session)
            async with stdio_streams() as (read, write):
                await server.run(read, write, server.create_initialization_options())
    finally:
        await services.aclose()


def discover_config(args: argparse.Namespace) -> None:
    """No --config and no --no-config: use the per-user servers.json if it exists, and say so (one line)."""
    if args.config is not None or args.no_config:
        return
    default = user_servers_path()
    if default.is_file():
        args.config = str(default)
        print(f"mcp-offload: proxying the servers in {default} (--no-config to skip it)", file=sys.stderr)


def _loop_options() -> dict[str, bool]:
    """uvloop when installed (a declared dependency off Windows): less CPU per call under load."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def check_session(session: str | None, transport: str) -> None:
    """`--session NAME` names a shared scope for one stdio client; on HTTP each client has its own scope."""
    if session is None:
        return
    if transport != "stdio":
        raise SettingsError("--session is for the stdio transport; HTTP clients are scoped by session or token")
    try:
        SessionScope.named(session)
    except ValueError as exc:
        raise SettingsError(f"--session: {exc}") from None


def main(argv: list[str] | None = None) -> None:
    """The one entry point: a subcommand's `main`, or the server; the exit status comes from `exit_status`."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        sys.exit(_run_subcommand(argv[0], argv[1:]))
    args = _parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,  # stdout is the MCP wire on stdio
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    sys.exit(exit_status(lambda: run(args)))


def run(args: argparse.Namespace) -> int | None:
    """Serve (stdio or HTTP) or run the demo. Operator errors (a refused network configuration, a bad config file
    or setting) and store errors propagate to `exit_status`."""
    settings = settings_from_args(args)
    if args.command == "demo":
        from mcp_offload.cli.demo import run_demo

        status: int = anyio.run(run_demo, settings)
        return status
    discover_config(args)
    check_session(args.session, args.transport)
    proxy = proxy_config_from_args(args)  # read first: a bad config file fails before anything starts
    if args.transport != "stdio":
        from mcp_offload.serve.http import http_options_from_args, run_http

        anyio.run(run_http, settings, http_options_from_args(args), proxy, backend_options=_loop_options())
        return None
    anyio.run(serve_stdio, settings, proxy, args.session, backend_options=_loop_options())
    return None


def _run_subcommand(name: str, argv: list[str]) -> int:
    logging.basicConfig(stream=sys.stderr, level="WARNING", format="%(levelname)s %(name)s: %(message)s")
    if name == "import-config":
        from mcp_offload.cli import import_config

        return import_config.main(argv)
    if name == "stats":
        from mcp_offload.cli import stats

        return stats.main(argv)
    if name == "gateway":
        from mcp_offload.cli import gateway

        return gateway.main(argv)
    from mcp_offload.cli import outputs

    return outputs.main(argv)
