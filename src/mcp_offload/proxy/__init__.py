"""Proxy mode: mcp-offload in front of other MCP servers, offloading their large results transparently.

    mcp-offload --config servers.json [--lazy-tools]

The CLI (any transport) needs three lines: `add_proxy_flags(parser)`, `config = proxy_config_from_args(args)` before
serving (a bad file fails fast), and `async with open_proxy(services, config) as extensions:` around
`build_server(services, extensions=extensions)`. A config read from a file is reloaded on SIGHUP or when the file
changes (reload.py).
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from mcp_offload.proxy.config import ConfigError, ProxyConfig, load_config

if TYPE_CHECKING:
    from mcp_offload.core.services import Services
    from mcp_offload.mcp_server.extension import Extension

__all__ = ["ConfigError", "ProxyConfig", "add_proxy_flags", "load_config", "open_proxy", "proxy_config_from_args"]


@asynccontextmanager
async def open_proxy(services: Services, config: ProxyConfig | None) -> AsyncIterator[list[Extension]]:
    """No config: no extensions. Otherwise the running proxy; leaving stops every upstream."""
    if config is None:
        yield []
        return
    from mcp_offload.proxy.router import ProxyRouter

    if not config.lazy_tools:
        router = ProxyRouter(config, services)
        extension: Extension = router
    else:
        from mcp_offload.proxy.discovery import LazyTools

        router = ProxyRouter(config, services, reserved=LazyTools.names)
        extension = LazyTools(router)
    async with router.running():
        if config.path is None:
            yield [extension]
            return
        from mcp_offload.proxy.reload import watch_config

        async with anyio.create_task_group() as tg:  # reload on SIGHUP or when the file changes (proxy/reload.py)
            tg.start_soon(watch_config, router, config.path)
            try:
                yield [extension]
            finally:
                tg.cancel_scope.cancel()


def add_proxy_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("proxy mode")
    group.add_argument(
        "--config",
        metavar="PATH",
        help='proxy the MCP servers of a {"mcpServers": …} file (claude_desktop_config.json format), offloading '
        "their large results",
    )
    group.add_argument(
        "--lazy-tools",
        action="store_true",
        help="with --config: list search_tools/describe_tool/call_tool instead of every upstream tool schema",
    )


def proxy_config_from_args(args: argparse.Namespace) -> ProxyConfig | None:
    """The validated config, read before serving starts, so a bad file fails fast (ConfigError → exit 2)."""
    if getattr(args, "config", None) is None:
        if getattr(args, "lazy_tools", False):
            raise ConfigError("--lazy-tools needs --config PATH (there are no upstream tools without one)")
        return None
    config = load_config(args.config)
    return replace(config, lazy_tools=True) if args.lazy_tools else config
