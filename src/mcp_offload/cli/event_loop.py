"""The event loop every long-running command runs on: uvloop when installed (a declared dependency off Windows)."""

from __future__ import annotations


def loop_options() -> dict[str, bool]:
    """`anyio.run(..., backend_options=loop_options())`: uvloop when installed, less CPU and latency per call (the
    gateway's added time per call with nothing to offload: see bench/gateway.py's latency probe)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}
