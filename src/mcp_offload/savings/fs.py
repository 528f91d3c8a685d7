"""The savings record on the filesystem store: one JSON-lines file per UTC day under `<store root>/savings/`.

Each flush appends one line per (server, tool) with the counts to add. Several processes may write the same file
at once: every line is one `write` on an `O_APPEND` descriptor and shorter than PIPE_BUF, so lines never
interleave. Files are 0600 in a 0700 directory, opened with `O_NOFOLLOW` (the store's discipline); a line that does
not parse (a disk that filled up mid-write) is skipped on reading (`store/record_files.py`). An `OSError` is
`StoreUnavailable` (`store/failures.py`).
"""

from __future__ import annotations

import json
import logging
import os
import select
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from mcp_offload.savings.record import COUNTERS, FLUSH_INTERVAL_S, Batch, SavingsKey, SavingsRecord
from mcp_offload.store.failures import filesystem_errors
from mcp_offload.store.record_files import (
    APPEND_FLAGS,
    FILE_MODE,
    READ_FLAGS,
    json_line,
    make_private_directory,
    write_all,
)

log = logging.getLogger(__name__)

DIRECTORY = "savings"
MAX_NAME_CHARS = 200  # keeps every line far below PIPE_BUF
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)


class FilesystemSavings(SavingsRecord):
    enabled = True

    def __init__(
        self, root: str | Path, *, clock: Callable[[], float] = time.time, flush_interval_s: float = FLUSH_INTERVAL_S
    ) -> None:
        super().__init__(clock=clock, flush_interval_s=flush_interval_s)
        self.directory = Path(root) / DIRECTORY

    def _path(self, day: str) -> Path:
        return self.directory / f"{day}.jsonl"

    async def _write(self, batch: Batch) -> None:
        by_day: dict[str, list[bytes]] = {}
        for key, counts in batch.items():
            line = json_line({"server": key.server[:MAX_NAME_CHARS], "tool": key.tool[:MAX_NAME_CHARS], **counts})
            if len(line) > _PIPE_BUF:  # cannot happen with capped names and integer counts; never tear a line
                continue
            by_day.setdefault(key.day, []).append(line)
        with filesystem_errors("the savings record could not be written ({reason})"):
            make_private_directory(self.directory)
            for day, lines in by_day.items():
                fd = os.open(self._path(day), APPEND_FLAGS, FILE_MODE)
                try:
                    for line in lines:
                        write_all(fd, line)
                finally:
                    os.close(fd)

    async def _read(self, days: Sequence[str]) -> Iterable[tuple[SavingsKey, dict[str, int]]]:
        found: list[tuple[SavingsKey, dict[str, int]]] = []
        with filesystem_errors("the savings record could not be read ({reason})"):
            for day in days:
                try:
                    fd = os.open(self._path(day), READ_FLAGS)
                except FileNotFoundError:
                    continue
                with os.fdopen(fd, "rb") as file:
                    for raw in file:
                        parsed = _parse(raw)
                        if parsed is not None:
                            server, tool, counts = parsed
                            found.append((SavingsKey(day, server, tool), counts))
        return found


def _parse(raw: bytes) -> tuple[str, str, dict[str, int]] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    server, tool = record.get("server"), record.get("tool")
    if not isinstance(server, str) or not isinstance(tool, str):
        return None
    counts = {name: value for name in COUNTERS if isinstance(value := record.get(name), int)}
    return server, tool, counts
