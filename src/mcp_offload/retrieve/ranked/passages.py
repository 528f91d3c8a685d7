"""Passages: an output's bytes cut into pieces of about `TARGET` bytes, at line ends where lines allow.

A passage is what ranked search scores and returns, so it should be small enough to point at an answer (a dozen
short lines, a few JSON Lines records) and large enough that a question's words land in one passage together.
Cuts fall just after the last "\\n" before each multiple of `TARGET`; a passage that is still longer than `LONGEST`
(a long line: minified JSON, a base64 blob) is cut again every `TARGET` bytes, each cut moved forward to a byte
that is ASCII and not a letter or digit (so no word and no UTF-8 sequence is split) when one is near.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mcp_offload.store.content_index import Buffer

TARGET = 1024
LONGEST = 4 * TARGET
_NEAR = 64  # how far a cut inside a long line may move to reach a word boundary

Int64s = npt.NDArray[np.int64]

# bytes a cut inside a long line may fall before: ASCII, not a letter or digit
_BOUNDARY = np.zeros(256, dtype=np.bool_)
for _b in range(128):
    _BOUNDARY[_b] = not chr(_b).isalnum()
_LEAD = np.ones(256, dtype=np.bool_)
_LEAD[0x80:0xC0] = False  # UTF-8 continuation bytes never start a passage


def passage_bounds(data: Buffer) -> Int64s:
    """Sorted byte offsets [0, c1, c2, ..., size]: passage i is data[bounds[i]:bounds[i + 1]]. Never empty
    passages; an empty output gives [0]."""
    b = np.frombuffer(data, dtype=np.uint8)
    size = len(b)
    if size == 0:
        return np.zeros(1, dtype=np.int64)
    newlines = np.flatnonzero(b == 0x0A)
    targets = np.arange(TARGET, size, TARGET, dtype=np.int64)
    last = np.searchsorted(newlines, targets, side="right") - 1
    cuts = newlines[last[last >= 0]] + 1
    bounds = np.unique(np.concatenate((np.zeros(1, np.int64), cuts.astype(np.int64), np.array([size], np.int64))))
    widths = np.diff(bounds)
    if int(widths.max()) <= LONGEST:
        return bounds
    extra: list[int] = []
    for i in np.flatnonzero(widths > LONGEST):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        pos = lo + TARGET
        while pos < hi - TARGET // 2:
            cut = _cut_near(b, pos, min(hi, pos + _NEAR))
            extra.append(cut)
            pos = cut + TARGET
    merged = np.unique(np.concatenate((bounds, np.array(extra, dtype=np.int64))))
    return merged


def _cut_near(b: npt.NDArray[np.uint8], pos: int, limit: int) -> int:
    """The first word boundary in [pos, limit), else the first UTF-8 lead byte at or after pos."""
    window = b[pos:limit]
    hits = np.flatnonzero(_BOUNDARY[window])
    if len(hits):
        return pos + int(hits[0])
    while pos < len(b) and not _LEAD[b[pos]]:
        pos += 1
    return pos
