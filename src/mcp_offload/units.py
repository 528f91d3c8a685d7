"""Durations, sizes and ports as people write them, for flags and `MCP_OFFLOAD_*` variables alike.

- `parse_duration`: `90s`, `15m`, `2h`, `3d`, `1w`, `1.5h`, `500ms`; a bare number is seconds.
- `parse_size`: `512`, `64KB`, `1MiB`, `1GiB`, `4G`, `1.5GB`; a bare number is bytes. KB/MB/GB/TB are powers of
  1000, KiB/MiB/GiB/TiB and the one-letter K/M/G/T powers of 1024 (as `ls -h` and `du` mean them).
- `parse_port`, `check_url_port`, `check_netloc_ports`: a TCP port is 1-65535; nothing wraps 70000 round to 4464 (the
  socket layer would).
"""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|sec|m|min|h|d|w)?", re.ASCII | re.IGNORECASE)
_DURATION_UNITS = {"": 1.0, "ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_UNITS["w"] = 7 * 86400.0
_SIZE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*([kmgt]?i?b?)", re.ASCII | re.IGNORECASE)
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_duration(text: str) -> float:
    """Seconds in `text` (see the module docstring); ValueError saying what is accepted."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h, 3d (a bare number is seconds)")
    value = float(match.group(1)) * _DURATION_UNITS[(match.group(2) or "").lower()]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is too long a duration")
    return value


def parse_size(text: str) -> int:
    """Bytes in `text` (see the module docstring); ValueError saying what is accepted."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size like 512, 64KB, 1MiB, 1GiB (a bare number is bytes)")
    unit = match.group(2).lower()
    prefix = unit[:1] if unit[:1] in "kmgt" and unit[:1] else ""
    if unit not in ("", "b") and not prefix:
        raise ValueError(f"{text!r} is not a size like 512, 64KB, 1MiB, 1GiB (a bare number is bytes)")
    base = 1000 if unit.endswith("b") and not unit.endswith("ib") and len(unit) == 2 else 1024
    value = float(match.group(1)) * base ** _POWERS[prefix]
    if not math.isfinite(value) or value >= 2**63:
        raise ValueError(f"{text!r} is too large a size")
    return int(value)


PORT_MIN, PORT_MAX = 1, 65535


def parse_port(text: str) -> int:
    """A TCP port, 1-65535; ValueError saying so (an unchecked 70000 would be bound as 70000 - 65536)."""
    if not _DIGITS.fullmatch(text.strip()):
        raise ValueError(f"{text!r} is not a port (a whole number {PORT_MIN}-{PORT_MAX})")
    port = int(text)
    if not PORT_MIN <= port <= PORT_MAX:
        raise ValueError(f"port {port} is out of range ({PORT_MIN}-{PORT_MAX})")
    return port


def check_url_port(url: str, *, numbers_only: bool = False) -> None:
    """ValueError when `url` names a port outside 1-65535 (or one that is not a number, unless `numbers_only`); no
    port is fine. The message names the port, not the URL (it may carry credentials)."""
    netloc = url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    check_netloc_ports(netloc, numbers_only=numbers_only)


def check_netloc_ports(netloc: str, *, numbers_only: bool = False) -> None:
    """As `check_url_port` for a URL's `[user@]host[:port][,host[:port]…]` part (a cluster URL lists several);
    `numbers_only`: a port that is not a number is left to the URL's own parser."""
    for part in netloc.rpartition("@")[2].split(","):
        host_port = part.partition("]")[2] if part.startswith("[") else part
        _, colon, port = host_port.rpartition(":")
        if colon and port and (port.isdigit() or not numbers_only):
            parse_port(port)


def format_duration(seconds: float) -> str:
    """The largest whole unit that fits: 259200 → "3d", 5400 → "90m", 10 → "10s"."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds}s"


def format_size(size: int) -> str:
    """The largest binary unit that divides it: 1073741824 → "1GiB", 1000 → "1000"."""
    for unit, power in (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if size >= 1024**power and size % 1024**power == 0:
            return f"{size // 1024**power}{unit}"
    return str(size)
