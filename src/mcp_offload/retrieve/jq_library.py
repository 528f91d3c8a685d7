"""Which libjq the jq workers load: jq.py's bundled one, a path the operator names, or (the default, "auto") the
optimised build of the same version that `.ci/build-libjq.sh` leaves in the per-user cache.

jq.py's wheel compiles its bundled libjq 1.8.2 at -O0 (its setup.py replaces autoconf's "-g -O2"), so parsing runs
at about a third of the speed the same source reaches at -O2. The build script compiles that same source (from the
jq.py sdist on PyPI) at -O2 into `<cache>/mcp-offload/libjq/jqpy-<jq.py version>/libjq.so`; "auto" uses it when it is
there for the installed jq.py version, so results stay byte-identical to the bundled library, only faster.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

AUTO = "auto"


def cached_libjq(environ: dict[str, str] | None = None) -> Path:
    """Where the build script puts the optimised libjq for the installed jq.py version."""
    env = os.environ if environ is None else environ
    try:
        version = importlib.metadata.version("jq")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "mcp-offload" / "libjq" / f"jqpy-{version}" / "libjq.so"


def resolve_libjq(setting: str, environ: dict[str, str] | None = None) -> str | None:
    """The library path to load, or None for jq.py's bundled libjq.

    "" → bundled; "auto" → the cached optimised build when it exists, else bundled; anything else → that path.
    """
    if setting != AUTO:
        return setting or None
    candidate = cached_libjq(environ)
    return str(candidate) if candidate.is_file() else None
