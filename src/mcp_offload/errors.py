"""The one exception family. Raised below `server/tools.py`, translated there once into an `isError` result.

Every message is written for the model: what was wrong and what to do instead. Messages never contain
file paths, scope ids or tracebacks.
"""

from __future__ import annotations


class OffloadError(Exception):
    """Base class: `str(error)` is the message the model sees."""


class InvalidHandle(OffloadError):
    """A handle that is not of the handle grammar (never touches the store)."""


class UnknownHandle(OffloadError):
    """No such output in this session (also: another session's output; no oracle)."""


class ExpiredHandle(OffloadError):
    """The output existed in this session but has expired or was evicted."""


class RangeError(OffloadError):
    """A read range that is out of bounds, reversed or mixed."""


class SearchError(OffloadError):
    """An invalid or unsupported regular expression, or a bad search argument."""


class QueryError(OffloadError):
    """A jq program that does not compile, fails, runs too long or prints too much."""


class InvalidContent(OffloadError):
    """Content that cannot be offloaded (empty, or the wrong kind for the operation)."""


class TooLarge(OffloadError):
    """Content over the configured size cap."""


class StoreFull(OffloadError):
    """The store is over its quota or the disk is full."""


class HandleExists(OffloadError):
    """A put under a handle that is already published in that scope (deterministic handles: someone else stored the
    same content first; the caller may treat the stored output as its own)."""


class StoreUnavailable(OffloadError):
    """The store cannot be reached or written (permissions, Redis down, ...)."""


class SettingsError(OffloadError):
    """A setting that cannot work (unknown encoding, bad store location); reported at startup."""
