"""A toy fifth LLM API and the provider that serves it, written as a new API and provider would be: one package,
added through the registries only (`register_api`, `register_provider`), no file of `src/` touched. The test
`tests/apis/test_toy_api.py` runs it through the gateway, the Compactor and the compression service.

- `api.py`: the "Toy Chat" API (`ToyApi`, name "toy", alias "toy-chat"): Chat-Completions-shaped messages under
  the body key `conversation`, tools as `{"tool", "about", "schema"}`, its own error document.
- `provider.py`: "Toy Cloud" (`ToyProvider`): `POST /toy/v1/models/{model}:complete`, forwarded to
  `<base>/v1/complete/{model}`; the key in `x-toy-key`; every request it sends signed (`x-toy-signature`, over the
  body actually sent: what a cloud that signs requests does after a rewrite); no default upstream.
- `framing.py`: Toy Cloud's binary stream frames (what AWS event-stream is to Bedrock).
- `upstream.py`: the scripted Toy Cloud on loopback, validating as the cloud would (key, signature, body shape).
"""

from toy_llm.api import TOY, ToyApi
from toy_llm.provider import TOY_CLOUD, ToyProvider

__all__ = ["TOY", "TOY_CLOUD", "ToyApi", "ToyProvider"]
