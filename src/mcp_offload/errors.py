"""The two exception families, by audience.

```
Exception
 ├── OffloadError ............... for the model: a tool call or a resource read that cannot be done
 │    ├── InvalidHandle             invalid_handle     -32602 invalid params
 │    ├── UnknownHandle             unknown_handle     -32002 resource not found
 │    ├── ExpiredHandle             expired_handle     -32002 resource not found
 │    ├── RangeError                bad_range          -32602 invalid params
 │    ├── SearchError               bad_search         -32602 invalid params
 │    ├── QueryError                bad_query          -32602 invalid params
 │    ├── InvalidContent            invalid_content    -32602 invalid params
 │    ├── TooLarge                  too_large          -32602 invalid params
 │    ├── NotEnumerable             not_enumerable     -32602 invalid params
 │    ├── StoreError .............. the store failed (any backend of anything kept beside the outputs)
 │    │    ├── StoreFull            store_full         -32603 internal error
 │    │    └── StoreUnavailable     store_unavailable  -32603 internal error
 │    ├── HandleExists              handle_exists      -32602 invalid params (a put under a derived handle already
 │    │                                                 published: the same content stored first by someone else)
 │    └── ContextWindowExceeded     context_window_exceeded -32602 invalid params (Compactor: the request cannot
 │                                                      fit its window)
 └── OperatorError .............. for the operator: flags, environment, config files, refused exposure
      ├── SettingsError             a setting that cannot work (bad number, unknown encoding, bad store location)
      ├── proxy.config.ConfigError  the proxied servers' config file
      ├── cli.client_config.ClientConfigError   an MCP client's config file
      └── web.exposure.RefusedConfig            an HTTP exposure the operator did not opt into
```

Model-facing errors are raised below the tools and translated once: into a tool answer (`core/pipeline.py`, whose
text is `str(error)`; every front end shows it, the MCP server as an `isError` result) or, on a resource read, into
a JSON-RPC error with the class's `rpc_code` (`mcp_server/offload_server.py`). Their messages say what was wrong and
what to do instead, and never contain file paths, scope ids or tracebacks. Each class has a stable `code` for
programs (the compactor, library users).

Operator errors become one line on stderr and exit status 2 in the command line (`cli/exit_status.py`); they
never reach a model. Nothing below the command line raises `SystemExit`.
"""

from __future__ import annotations

# JSON-RPC 2.0 error codes (and MCP's "resource not found"), kept here so the core needs no MCP import
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002


_CAUSE_DEPTH = 8  # how far down a chain of causes `reason_of` looks for a message


def reason_of(exc: BaseException) -> str:
    """An exception's message as a clause inside a sentence of ours: its text without a final period, since the
    sentence adds its own (httpcore's "Server disconnected without sending a response." came out with two).

    An exception without text says what caused it: httpx's ReadError on a connection the peer reset carries none,
    nor does the anyio error under it, but the OSError at the bottom does ("Connection reset by peer"). The class
    name is the last resort."""
    text = _own_text(exc)
    cause, depth = exc.__cause__ or exc.__context__, 0
    while not text and cause is not None and depth < _CAUSE_DEPTH:
        text = _own_text(cause)
        cause, depth = cause.__cause__ or cause.__context__, depth + 1
    text = text or type(exc).__name__
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _own_text(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is None and isinstance(exc.strerror, str) and exc.strerror.strip():
        return exc.strerror.strip()  # "Connection reset by peer", not "[Errno 104] Connection reset by peer"
    return str(exc).strip()


class OffloadError(Exception):
    """Base class of the model-facing errors: `str(error)` is the message the model sees."""

    code: str = "offload_error"
    rpc_code: int = INVALID_PARAMS


class InvalidHandle(OffloadError):
    """A handle that is not of the handle grammar (never touches the store)."""

    code = "invalid_handle"


class UnknownHandle(OffloadError):
    """No such output in this session (also: another session's output; no oracle)."""

    code = "unknown_handle"
    rpc_code = RESOURCE_NOT_FOUND


class ExpiredHandle(OffloadError):
    """The output existed in this session but has expired or was evicted."""

    code = "expired_handle"
    rpc_code = RESOURCE_NOT_FOUND


class RangeError(OffloadError):
    """A read range that is out of bounds, reversed or mixed."""

    code = "bad_range"


class SearchError(OffloadError):
    """An invalid or unsupported regular expression, or a bad search argument."""

    code = "bad_search"


class QueryError(OffloadError):
    """A jq program that does not compile, fails, runs too long or prints too much."""

    code = "bad_query"


class InvalidContent(OffloadError):
    """Content that cannot be offloaded (empty, or the wrong kind for the operation)."""

    code = "invalid_content"


class TooLarge(OffloadError):
    """Content over the configured size cap. `reason` is what happened; the message adds `advice` for a model that
    offloaded it itself (split it), which the proxy leaves out: a model cannot split an upstream's result."""

    def __init__(self, reason: str, advice: str = "") -> None:
        super().__init__(f"{reason} {advice}".strip())
        self.reason = reason

    code = "too_large"


class NotEnumerable(OffloadError):
    """Listing asked of a session that has no identity to list by (pass a handle instead)."""

    code = "not_enumerable"


class StoreError(OffloadError):
    """The store failed: the one thing a caller catches for "the store (outputs, savings or decision record) could not
    be read or written". Backends raise only these two, never `OSError` or a driver's error (`store/failures.py`)."""

    code = "store_error"
    rpc_code = INTERNAL_ERROR


class StoreFull(StoreError):
    """The store is over its quota or the disk is full."""

    code = "store_full"
    rpc_code = INTERNAL_ERROR


class HandleExists(OffloadError):
    """A put under a handle that is already published in that scope (deterministic handles: someone else stored the
    same content first; the caller may treat the stored output as its own)."""

    code = "handle_exists"


class ContextWindowExceeded(OffloadError):
    """`Compactor.compact(..., context_window=W)` could not bring the request under W: every step ran (compact/
    budget.py lists them) and what is left cannot be reduced. The message names it: the fixed part (system prompt,
    tool definitions, the room reserved for the output) and the largest messages that stay. `tokens` is what the
    request still costs, `context_window` the window, `irreducible` one line per part that could not be reduced."""

    code = "context_window_exceeded"

    def __init__(self, tokens: int, context_window: int, irreducible: list[str]) -> None:
        self.tokens, self.context_window, self.irreducible = tokens, context_window, irreducible
        super().__init__(
            f"the request needs {tokens:,} tokens after compaction, over the context window of {context_window:,}; "
            f"what could not be reduced: {'; '.join(irreducible)}. Raise context_window, lower max_output_tokens, "
            "or shorten what is listed."
        )


class StoreUnavailable(StoreError):
    """The store cannot be reached or written (permissions, Redis down, ...)."""

    code = "store_unavailable"
    rpc_code = INTERNAL_ERROR


class OperatorError(Exception):
    """Base class of the operator-facing errors: `str(error)` is one line for stderr (the CLI prefixes the program
    name and exits with status 2)."""


class SettingsError(OperatorError):
    """A setting that cannot work (a bad number, an unknown encoding, a bad store location); reported at startup."""
