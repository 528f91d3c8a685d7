"""One name for the concept "which LLM API": `ApiName`, the words the code uses everywhere (never "format",
"family", "dialect" or "kind"); and `Provider`, whose servers answer it (the gateway's upstream base URL).

Aliases a caller may write (`"openai"`, `"chat"`, `"openai-responses"`) are accepted only at the public boundary
(the `Compactor`'s `format=`, the compression service's `format`), which maps them to an `ApiName` at once.
"""

from __future__ import annotations

from typing import Literal, get_args

ApiName = Literal["anthropic", "openai_chat", "responses", "gemini"]
API_NAMES: tuple[ApiName, ...] = get_args(ApiName)

Provider = Literal["anthropic", "openai", "gemini"]
