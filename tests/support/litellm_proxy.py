"""The real LiteLLM proxy (PyPI `litellm[proxy]`, pinned by .ci/litellm-deps.sh, in its own venv) as a subprocess.

`start_litellm(config)` writes the config.yaml, starts `litellm --config … --port …` on a free loopback port and
waits for its liveliness probe; the fixture stops every proxy it started (by its own process id). Skips loudly when
the pinned proxy is not installed (`export "$(bash .ci/litellm-deps.sh)"` installs it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from support import free_port
from support.isolation import require_marker

MASTER_KEY = "sk-litellm-test-5f0c2a9e7b3d41c8a6e2f9d0b7c4a1e3"
DEFAULT_BINARY = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload/litellm-venv/bin/litellm"


SRC = Path(__file__).resolve().parents[2] / "src"  # the in-tree mcp_offload, first on the proxy's PYTHONPATH


def litellm_binary() -> Path | None:
    found = Path(os.environ.get("MCP_OFFLOAD_TEST_LITELLM", DEFAULT_BINARY))
    return found if found.is_file() and os.access(found, os.X_OK) else None


class LiteLLMProxy:
    def __init__(
        self, binary: Path, config: dict[str, Any], workdir: Path, extra_env: dict[str, str] | None = None
    ) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.log_path = workdir / f"litellm-{self.port}.log"
        config = {**config, "general_settings": {"master_key": MASTER_KEY, **config.get("general_settings", {})}}
        self.config_path = workdir / f"litellm-{self.port}.yaml"
        self.config_path.write_text(json.dumps(config, indent=1))  # JSON is YAML
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "OPENAI_", "ANTHROPIC_"))}
        env.update({"LITELLM_LOG": "INFO", "NO_PROXY": "127.0.0.1,localhost", "DISABLE_SCHEMA_UPDATE": "true"})
        env.update(extra_env or {})
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [str(binary), "--config", str(self.config_path), "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=workdir,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s: float = 180) -> LiteLLMProxy:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"litellm exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(self.base_url + "/health/liveliness", timeout=2).status_code == 200:
                    return self
            time.sleep(0.5)
        raise RuntimeError(f"litellm did not become ready in {timeout_s:.0f} s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)  # its own session: the proxy and its workers
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        self._log.close()


StartLiteLLM = Callable[..., LiteLLMProxy]


@pytest.fixture(scope="module")
def start_litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartLiteLLM]:
    """`start_litellm(config, env=None)`: a ready LiteLLM proxy for this config (the master key is added; `env` adds
    to its environment), stopped after."""
    require_marker("real_agent", "the real LiteLLM proxy")
    binary = litellm_binary()
    if binary is None:
        pytest.skip('the pinned LiteLLM proxy is not installed: run export "$(bash .ci/litellm-deps.sh)"')
    workdir = tmp_path_factory.mktemp("litellm")
    started: list[LiteLLMProxy] = []

    def start(config: dict[str, Any], env: dict[str, str] | None = None) -> LiteLLMProxy:
        proxy = LiteLLMProxy(binary, config, workdir, env)
        started.append(proxy)
        return proxy.wait_ready()

    yield start
    for proxy in started:
        proxy.stop()
