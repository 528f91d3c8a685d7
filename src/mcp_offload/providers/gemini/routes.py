"""Which requests are the Gemini API's, and what their path says.

    POST /{v1beta|v1|v1alpha}/models/{model}:generateContent             rewritten, then the retrieval loop
    POST /{v1beta|v1|v1alpha}/models/{model}:streamGenerateContent?alt=sse   (same, streamed)
    anything else of Gemini's (countTokens, GET /v1beta/models, files, ...)  relayed byte for byte

Gemini CLI calls `/v1beta/...`, the `google-genai` SDK `/v1/...` (its default api version), which is also where
OpenAI's routes are (`/v1/chat/completions`, `/v1/models`). They are told apart by the `:method` suffix under
`models/` (OpenAI paths never carry one) and by the key: `x-goog-api-key` or `?key=` (Gemini's API key, passed
upstream untouched; never stored). A `/v1/models` listing with neither goes to OpenAI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

GEMINI_DEFAULT = "https://generativelanguage.googleapis.com"
KEY_HEADER = "x-goog-api-key"
GENERATE_METHODS = ("generateContent", "streamGenerateContent")
_MODEL_PATH = re.compile(r"^/(v1beta|v1|v1alpha)/(models|tunedModels)/([^/:]+):([A-Za-z]+)$")
_OWN_VERSIONS = ("/v1beta/", "/v1alpha/", "/v1beta", "/v1alpha")


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A `/{version}/models/{model}:{method}` path."""

    version: str
    model: str
    method: str

    @property
    def stream(self) -> bool:
        return self.method == "streamGenerateContent"


def model_call(path: str) -> ModelCall | None:
    found = _MODEL_PATH.match(path)
    if found is None:
        return None
    return ModelCall(version=found.group(1), model=found.group(3), method=found.group(4))


def generate_call(method: str, path: str) -> ModelCall | None:
    """The generate call a request is (POST `…:generateContent` / `…:streamGenerateContent`), else None."""
    if method != "POST":
        return None
    call = model_call(path)
    return call if call is not None and call.method in GENERATE_METHODS else None


def generate_path(path: str) -> str:
    """The `:generateContent` path of a `:streamGenerateContent` one. The gateway answers a JSON-array stream whose
    turn may loop with one generateContent call (a 1-item array): its follow-ups need whole answers."""
    return path.removesuffix(":streamGenerateContent") + ":generateContent"


def query_key(query: str) -> str | None:
    """The `key` query parameter (Gemini's other way to pass the API key)."""
    if "key=" not in query:
        return None
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == "key":
            return value
    return None


def is_gemini(path: str, headers: Mapping[str, str], query: str) -> bool:
    """A request for Gemini's upstream (see the module docstring)."""
    if path.startswith(_OWN_VERSIONS) or model_call(path) is not None:
        return True
    return KEY_HEADER in headers or query_key(query) is not None


def credential_headers(headers: Mapping[str, str], query: str) -> dict[str, str]:
    """`headers` with a `?key=` API key also under `x-goog-api-key`, so it scopes the session as the header does
    (for the session only: the request goes upstream as the client sent it)."""
    key = query_key(query)
    if key is None or KEY_HEADER in headers:
        return dict(headers)
    return {**headers, KEY_HEADER: key}
