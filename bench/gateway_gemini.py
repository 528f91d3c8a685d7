"""The Gemini client side of bench/gateway.py: request bodies (`contents`, `systemInstruction`, one Tool of
`functionDeclarations`), `streamGenerateContent?alt=sse` accumulation (parts kept as they came: every
`thoughtSignature` goes back as issued, as Gemini CLI and the SDKs send it), the model's answer absorbed into the
history with the tool outputs as `functionResponse` parts (`{"output": …}`, Gemini CLI's shape), and where the
tool result texts sit (for the lossy baselines).

Gemini 2.5 Flash prices (https://ai.google.dev/gemini-api/docs/pricing): input $0.30, cached input $0.03 (0.10x,
implicit caching, no write premium), output $2.50 per million tokens (8.33x the input price)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

MODEL = "gemini-2.5-flash"
OUTPUT_PRICE = 2.50 / 0.30


def path(model: str) -> str:
    return f"/v1beta/models/{model}:streamGenerateContent?alt=sse"


def headers(key: str) -> dict[str, str]:
    return {"x-goog-api-key": key}


def first_message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def body(history: list[dict[str, Any]], tools: list[Any], system: str) -> dict[str, Any]:
    declarations = [{"name": t["name"], "description": t["description"], "parametersJsonSchema": t["schema"]}
                     for t in tools]  # fmt: skip
    return {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": history,
        "tools": [{"functionDeclarations": declarations}],
        "generationConfig": {"temperature": 0.2},
    }


def absorb(history: list[dict[str, Any]], parts: list[dict[str, Any]], output: Callable[[dict[str, Any]], str]) -> bool:
    """Append the model's parts and the outputs of its calls; False when it called nothing (the session is over)."""
    history.append({"role": "model", "parts": parts})
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    if not calls:
        return False
    answers = []
    for call in calls:
        ids = {"id": call["id"]} if call.get("id") else {}
        answers.append(
            {"functionResponse": {**ids, "name": call["name"], "response": {"output": output(call.get("args") or {})}}}
        )
    history.append({"role": "user", "parts": answers})
    return True


class GeminiAccumulator:
    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []

    def send(self, event: dict[str, Any]) -> None:
        for candidate in event.get("candidates") or []:
            self.parts.extend((candidate.get("content") or {}).get("parts") or [])

    def result(self) -> list[dict[str, Any]]:
        return self.parts


def is_delta(event: dict[str, Any]) -> bool:
    return any((c.get("content") or {}).get("parts") for c in event.get("candidates") or [])


def result_slots(history: list[dict[str, Any]]) -> Iterator[tuple[int, int]]:
    for i, content in enumerate(history):
        for j, part in enumerate(content.get("parts") or []):
            if "functionResponse" in part:
                yield i, j


def replace_result(content: dict[str, Any], j: int, rewrite: Callable[[str], str]) -> dict[str, Any]:
    parts = list(content["parts"])
    answer = parts[j]["functionResponse"]
    parts[j] = {"functionResponse": {**answer, "response": {"output": rewrite(answer["response"]["output"])}}}
    return {**content, "parts": parts}
