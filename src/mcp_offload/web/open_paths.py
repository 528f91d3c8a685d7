"""`OpenPaths`: the requests a check lets through, as `"/healthz"` (any method) or `"GET /healthz"` (that method
only: a front end that relays every other method on a path must not open it to them)."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import Scope


class OpenPaths:
    def __init__(self, entries: Iterable[str]) -> None:
        self._any: set[str] = set()
        self._by_method: set[tuple[str, str]] = set()
        for entry in entries:
            method, _, path = entry.rpartition(" ")
            if method:
                self._by_method.add((method, path))
            else:
                self._any.add(path)

    def includes(self, scope: Scope) -> bool:
        path = scope.get("path", "")
        return path in self._any or (scope.get("method", ""), path) in self._by_method
