"""The real `mcp-offload` process on a raw stdio pipe: lines in, JSON-RPC messages out, as a client that is not the
SDK's would speak to it."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import HANG_TIMEOUT_S


class RawPipe:
    def __init__(self, store: Path, *args: str) -> None:
        script = Path(sys.executable).with_name("mcp-offload")
        self.proc = subprocess.Popen(
            [str(script), "--store", str(store), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ},
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = HANG_TIMEOUT_S) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.receive_line(timeout))
        return message

    def receive_line(self, timeout: float = HANG_TIMEOUT_S) -> bytes:
        """The next line the server wrote, as its bytes (without the newline)."""
        assert self.proc.stdout is not None
        while b"\n" not in self._buffer:
            if not self._selector.select(timeout):
                raise AssertionError(f"no reply within {timeout} s (the server stayed silent)")
            chunk = self.proc.stdout.read(1 << 16)
            if not chunk:
                raise AssertionError("the server closed stdout")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=HANG_TIMEOUT_S)
        self._selector.close()
