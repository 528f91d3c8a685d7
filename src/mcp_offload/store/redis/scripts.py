"""The Lua scripts of `store/lua/` (shipped as package data of `mcp_offload.store`), read once at import.

Every script but `unpin` and `ledger` runs with the shared prelude in front. Each one is atomic in Redis, which is
what keeps the bookkeeping (totals, LRU and expiry zsets) in agreement with the keys; each one touches only the keys
it is given in KEYS, all in one hash slot on a cluster.
"""

from __future__ import annotations

import importlib.resources


def _lua(name: str, *, prelude: bool = True) -> str:
    """A script of `store/lua/` (shipped as package data), with the shared prelude in front unless told not to."""
    body = (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")
    return _LUA_PRELUDE + "\n" + body if prelude else body


_LUA_DIR = importlib.resources.files("mcp_offload.store") / "lua"
_LUA_PRELUDE = (_LUA_DIR / "prelude.lua").read_text(encoding="utf-8")
LUA_REAP = _lua("reap")  # -> {removed members, members absent from the ledger}
LUA_PUBLISH = _lua("publish")  # -> 'ok' | 'exists' | 'lost' | 'pinned' | 'over'
LUA_OPEN = _lua("open")  # -> {'ok', meta, index, content-or-nil} | {'gone', reason} | {'unknown'}
LUA_UNPIN = _lua("unpin", prelude=False)  # KEYS: the pin
LUA_DELETE = _lua("delete")  # -> {'ok'} | {'gone', reason} | {'unknown'} | {'pinned'}
LUA_LEDGER = _lua("ledger", prelude=False)  # a cluster's store-wide books: reserve, publish, forget
