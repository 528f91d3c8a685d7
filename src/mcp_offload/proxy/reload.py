"""Reloading the proxy's config while it runs: on SIGHUP, or when the file changes (its mtime/size/inode, polled
every second), the file is read again and applied with `ProxyRouter.reconfigure` (new upstreams start, removed ones
stop, changed ones restart, the rest keep running; clients get `list_changed`).

A broken edit (not JSON, an invalid entry, a missing file) keeps the running config and logs one line to stderr
saying why; the next change is tried again.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio

from mcp_offload.proxy.config import ConfigError, load_config
from mcp_offload.proxy.router import ProxyRouter

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
Fingerprint = tuple[int, int, int, int] | None


def fingerprint(path: Path) -> Fingerprint:
    """What changes when the file is edited or replaced (editors and atomic writers rename a new file in)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


async def reload_config(router: ProxyRouter, path: Path) -> bool:
    """Read `path` and apply it. A bad file keeps the old config (one WARNING log line); returns whether applied."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        log.warning("config reload refused, the running config is kept: %s", exc)
        return False
    added, removed, restarted = await router.reconfigure(config)
    log.info(
        "config reloaded from %s: added %s, removed %s, restarted %s",
        path,
        ", ".join(added) or "none",
        ", ".join(removed) or "none",
        ", ".join(restarted) or "none",
    )
    return True


async def watch_config(router: ProxyRouter, path: Path, *, interval_s: float = POLL_INTERVAL_S) -> None:
    """Run until cancelled: reload on SIGHUP (where signals exist and this is the main thread) or on a file change."""
    wake = anyio.Event()
    async with anyio.create_task_group() as tg:
        if hasattr(signal, "SIGHUP"):
            tg.start_soon(_on_sighup, lambda: wake.set())  # (the current `wake`)
        seen = fingerprint(path)
        while True:
            with anyio.move_on_after(interval_s):
                await wake.wait()
            hup, wake = wake.is_set(), anyio.Event()
            now = fingerprint(path)
            if hup or now != seen:
                seen = now
                await reload_config(router, path)


async def _on_sighup(notify: Callable[[], None]) -> None:
    try:
        with anyio.open_signal_receiver(signal.SIGHUP) as signals:
            async for _ in signals:
                notify()
    except (RuntimeError, ValueError, NotImplementedError):  # not the main thread / no signals here: poll only
        log.debug("SIGHUP reload unavailable; watching the file only", exc_info=True)
