"""The upstream's state: the script, the prompt cache, the signer, and the log of every request received."""

from __future__ import annotations

import hashlib
import random
import string
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_upstream.cache import CacheUsage, PromptCache, SessionStats
from llm_upstream.errors import ApiError, ApiKind
from llm_upstream.prompt import TokenCache
from llm_upstream.script import AgentScript, Reply, Script, Step, Turn, resolve
from llm_upstream.signing import Signer


@dataclass(slots=True)
class ReceivedRequest:
    """One request as it arrived, and what became of it."""

    api: ApiKind | None
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON (None when it did not parse)
    received_at: float = field(default_factory=time.monotonic)
    session: str | None = None
    status: int = 200
    error: str | None = None  # the message of a 4xx/5xx answer
    usage: CacheUsage | None = None
    output_tokens: int = 0
    stream: bool = False
    reply: Reply | ApiError | None = None
    finished: bool = False  # the whole answer was written
    client_gone: bool = False  # the client disconnected before the end of the stream
    first_event_at: float | None = None
    cloud: str | None = None  # "bedrock", "vertex", "azure": the cloud route it came by (None: a vendor's API)

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}


def session_key(api: ApiKind, headers: dict[str, str], model: str) -> str:
    """`api:credential-hash:model`: the scope of a provider's prompt cache (the credential is hashed)."""
    credential = (
        headers.get("x-api-key")
        or headers.get("x-goog-api-key")
        or headers.get("authorization", "").removeprefix("Bearer ").strip()
    )
    return f"{api}:{hashlib.sha256(credential.encode()).hexdigest()[:12]}:{model}"


class UpstreamState:
    def __init__(
        self, script: Script | None = None, *, cache: PromptCache | None = None, seed: int | None = None
    ) -> None:
        self.cache = cache or PromptCache()
        self.signer = Signer()
        self.tokens = TokenCache()
        self.default_script: Callable[[Turn], Step] = AgentScript()
        self.requests: list[ReceivedRequest] = []
        self.responses: dict[str, list[dict[str, Any]]] = {}  # Responses API: id -> items (input + output)
        self.active_streams = 0
        self.bedrock_region = "us-east-1"  # the region the scripted Bedrock answers for (signatures are scoped to it)
        self._script: Callable[[Turn], Step] | None = None  # a list script goes to the queue
        self._queue: deque[Step] = deque()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._generated = 0
        self.use(script)

    # -- scripting ------------------------------------------------------------------------------------------------
    def use(self, script: Script | None) -> None:
        """Replace the script: a list of steps (queued) or a callable; None restores the default."""
        with self._lock:
            self._queue.clear()
            self._script = None
            if isinstance(script, list):
                self._queue.extend(script)
            else:
                self._script = script

    def push(self, *steps: Step) -> None:
        """Queue steps; they are used before the callable / default script."""
        with self._lock:
            self._queue.extend(steps)

    def next_reply(self, turn: Turn) -> Reply | ApiError:
        with self._lock:
            step: Step = self._queue.popleft() if self._queue else (self._script or self.default_script)
        return resolve(step, turn)

    def next_index(self) -> int:
        with self._lock:
            self._generated += 1
            return self._generated - 1

    def mint_id(self, prefix: str) -> str:
        alphabet = string.ascii_letters + string.digits
        with self._lock:
            return prefix + "".join(self._rng.choice(alphabet) for _ in range(24))

    # -- log ------------------------------------------------------------------------------------------------------
    def record(self, entry: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(entry)

    def received(
        self, api: ApiKind | None = None, *, ok_only: bool = False, cloud: str | None = None
    ) -> list[ReceivedRequest]:
        with self._lock:
            found = [r for r in self.requests if (api is None or r.api == api) and (cloud is None or r.cloud == cloud)]
        return [r for r in found if r.status == 200] if ok_only else found

    def stats(self, session: str) -> SessionStats:
        return self.cache.stats(session)

    def reset(self) -> None:
        """Forget requests, cached prompts and queued steps (the script callable stays)."""
        with self._lock:
            self.requests.clear()
            self.responses.clear()
            self._queue.clear()
        self.cache.clear()
