"""Run the scripted upstream on a free loopback port in a background thread (its own event loop)."""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from llm_upstream.app import build_app
from llm_upstream.cache import PromptCache, SessionStats
from llm_upstream.errors import ApiKind
from llm_upstream.script import Script, Step
from llm_upstream.state import ReceivedRequest, UpstreamState
from support import HANG_TIMEOUT_S


class UpstreamServer:
    """The scripted LLM API on 127.0.0.1.

    `base_url` is what an Anthropic client / ANTHROPIC_BASE_URL takes, `openai_url` (base + /v1) what an OpenAI
    client / OPENAI_BASE_URL takes. `requests` lists everything received; `stats(session)` / `sessions()` give the
    simulated cache counters; `use(script)` / `push(*steps)` decide the replies.
    """

    def __init__(
        self, script: Script | None = None, *, cache: PromptCache | None = None, port: int = 0, seed: int | None = None
    ) -> None:
        self.state = UpstreamState(script, cache=cache, seed=seed)
        self._port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self, timeout_s: float = HANG_TIMEOUT_S) -> UpstreamServer:
        config = uvicorn.Config(
            build_app(self.state), host="127.0.0.1", port=self._port, log_config=None, access_log=False,
            lifespan="off", loop="asyncio", http="h11", timeout_graceful_shutdown=1,
        )  # fmt: skip
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name="llm-upstream", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the scripted LLM upstream did not start")
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> UpstreamServer:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    # -- addresses ----------------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    # -- scripting and assertions -------------------------------------------------------------------------------
    def use(self, script: Script | None) -> None:
        self.state.use(script)

    def push(self, *steps: Step) -> None:
        self.state.push(*steps)

    @property
    def requests(self) -> list[ReceivedRequest]:
        return self.state.received()

    def received(
        self, api: ApiKind | None = None, *, ok_only: bool = False, cloud: str | None = None
    ) -> list[ReceivedRequest]:
        return self.state.received(api, ok_only=ok_only, cloud=cloud)

    @property
    def cache(self) -> PromptCache:
        return self.state.cache

    def stats(self, session: str) -> SessionStats:
        return self.state.stats(session)

    def sessions(self) -> dict[str, SessionStats]:
        return self.state.cache.sessions()

    @property
    def active_streams(self) -> int:
        return self.state.active_streams

    def reset(self) -> None:
        self.state.reset()

    def __repr__(self) -> str:
        return f"UpstreamServer({self.base_url}, {len(self.requests)} requests)"

    def describe(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "requests": len(self.requests), "sessions": len(self.sessions())}
