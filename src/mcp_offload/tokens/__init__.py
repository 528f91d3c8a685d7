"""Token counting: `TokenCounter` (counter.py) over a vocabulary loaded offline and hash-checked (vocab.py).

`load_counter(encoding)` is the entry point: the shared, exact counter for a tiktoken encoding, or an estimating
one (flagged `estimated`) when the vocabulary cannot be had without the network.
"""

from __future__ import annotations

from mcp_offload.tokens.counter import ESTIMATE_BYTES_PER_TOKEN, EXACT_LIMIT_CHARS, TokenCounter
from mcp_offload.tokens.vocab import (
    DEFAULT_ENCODING,
    SOURCE_BUNDLED,
    SOURCE_CACHE,
    SOURCE_ESTIMATE,
    bundled_data_dir,
    load_counter,
    open_counter,
    supported_encodings,
    tiktoken_cache_dir,
)

__all__ = [
    "DEFAULT_ENCODING",
    "ESTIMATE_BYTES_PER_TOKEN",
    "EXACT_LIMIT_CHARS",
    "SOURCE_BUNDLED",
    "SOURCE_CACHE",
    "SOURCE_ESTIMATE",
    "TokenCounter",
    "bundled_data_dir",
    "load_counter",
    "open_counter",
    "supported_encodings",
    "tiktoken_cache_dir",
]
