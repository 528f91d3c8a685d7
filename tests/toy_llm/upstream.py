"""The scripted Toy Cloud on a free loopback port: it validates every request as the cloud would (its key, the
signature over the body it received, a Toy Chat body: `conversation` of Chat messages, tools as `{"tool", …}`) and
answers in Chat's completion shape. Its script: while the request offers `search_large_output` and the last message
is not an answer to a search, it searches the first stored output it sees for "needle"; then it answers with the
line the search found."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from support import HANG_TIMEOUT_S
from toy_llm.framing import TOY_FRAMES, frame_event
from toy_llm.provider import signature

HANDLE = re.compile(r"out_[a-z2-7]{26}")


@dataclass
class ToyCloud:
    received: list[dict[str, Any]] = field(default_factory=list)  # the valid bodies, in order
    refused: list[str] = field(default_factory=list)  # why invalid requests were refused
    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def complete(self, request: Request) -> Response:
        raw = await request.body()
        problem = _problem(request, raw)
        if problem is not None:
            self.refused.append(problem)
            return JSONResponse({"toy_error": {"status": 400, "code": "invalid", "message": problem}}, 400)
        body = json.loads(raw)
        self.received.append(body)
        answer = _answer(request.path_params["model"], body)
        if body.get("stream") is True:
            return StreamingResponse(_frames(answer), media_type=TOY_FRAMES.media_type)
        return JSONResponse(answer)

    def start(self) -> ToyCloud:
        app = Starlette(routes=[Route("/v1/complete/{model}", self.complete, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="off")
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name="toy-cloud", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the toy cloud did not start")
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def _problem(request: Request, raw: bytes) -> str | None:
    if not request.headers.get("x-toy-key"):
        return "no x-toy-key"
    if request.headers.get("x-toy-signature") != signature(raw):
        return "bad signature"
    try:
        body = json.loads(raw)
    except ValueError:
        return "not JSON"
    if not isinstance(body, dict) or "messages" in body or not isinstance(body.get("conversation"), list):
        return "a Toy Chat body holds its messages in `conversation`"
    tools = body.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("tool"), str) for t in tools):
        return "tools are {tool, about, schema}"
    return None


async def _frames(answer: dict[str, Any]) -> Any:
    """The answer as Chat Completions stream chunks, each SSE event in a toy frame (a tool call's arguments in two
    pieces, as streams split them)."""
    choice, base = (
        answer["choices"][0],
        {"id": answer["id"], "object": "chat.completion.chunk", "model": answer["model"]},
    )
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": message.get("content") or ""}]
    for i, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": arguments[:half]},
                    }
                ]
            }
        )
        deltas.append({"tool_calls": [{"index": i, "function": {"arguments": arguments[half:]}}]})
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    chunks.append({**base, "choices": [], "usage": answer["usage"]})
    for chunk in chunks:
        yield frame_event(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    yield frame_event(b"data: [DONE]\n\n")


def _answer(model: str, body: dict[str, Any]) -> dict[str, Any]:
    conversation: list[dict[str, Any]] = body["conversation"]
    offers_search = any(t.get("tool") == "search_large_output" for t in body.get("tools", []))
    last = conversation[-1]
    searched = last.get("role") == "tool" and str(last.get("tool_call_id", "")).startswith("toy_search")
    handles = [h for m in conversation for h in HANDLE.findall(json.dumps(m))]
    if offers_search and handles and not searched:
        arguments = json.dumps({"pattern": "needle", "handle": handles[0]})
        call = {"id": f"toy_search_{len(conversation)}", "type": "function",
                "function": {"name": "search_large_output", "arguments": arguments}}  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        found = [line for line in str(last.get("content")).splitlines() if "needle is" in line]
        message, finish = {"role": "assistant", "content": "found: " + (found[0] if found else "nothing")}, "stop"
    prompt = len(json.dumps(conversation)) // 4
    return {
        "id": f"toy-{len(conversation)}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5,
                  "prompt_tokens_details": {"cached_tokens": prompt // 2}},
    }  # fmt: skip
