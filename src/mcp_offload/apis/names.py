"""One name for the concept "which LLM API": `ApiName`, the words the code uses everywhere (never "format",
"family", "dialect" or "kind"). The names are the registry's keys (`registry.APIS`): the packages here, and any
API registered with `registry.register_api`.

Aliases a caller may write (`"openai"`, `"chat"`, `"openai-responses"`) are each API's `aliases`, accepted only at
the public boundary (the `Compactor`'s `format=` and `tools()`, the compression service's `format`, `wrap --api`),
which resolves them to the `LlmApi` at once (`registry.api_named`); inside, the object is passed, never its name.
"""

from __future__ import annotations

ApiName = str
