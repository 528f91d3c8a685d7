"""The HTTP base both HTTP front ends stand on: the MCP HTTP service (`serve/http/`) and the LLM gateway
(`gateway/`). Each is a Starlette app wrapped in the same pure ASGI middleware, outermost first:

    AccessLog ⊃ HostOriginCheck ⊃ TokenGate ⊃ [DrainGate] ⊃ BodyLimit ⊃ the front end's routes

- `access_log`: one structured line per HTTP request, on the front end's logger, with what its routes add;
- `host_check`: DNS-rebinding protection (the Host and Origin rules, `exposure_rules`), before anything else;
- `token_check`: the front end's token (constant-time, principals by fingerprint), wherever its clients present it;
- `drain`: a shutdown's drain (`Drain`: draining, the work in flight) and `DrainGate`, which counts and, once
  draining, refuses HTTP requests (the MCP service counts MCP requests instead: `serve/http/in_flight.py`);
- `body_limit`: a declared body over the cap is refused before it is read;
- `refusal`: what a check answers, which each front end writes in its clients' own error format (`Refuse`);
- `open_paths`: the requests a check lets through (health probes);
- `health`: `GET /healthz`; `server`: uvicorn with the drain phase and a plain exit on SIGTERM; `page`: the style
  of the status pages.

What differs between the front ends is passed in, never copied: where the token is presented (`Authorization` for
MCP clients; `x-mcp-offload-token` / `Proxy-Authorization` at the gateway, whose `Authorization` is the provider's),
which paths are open, and the error format of a refusal (JSON-RPC for MCP clients, the calling API's own error
document at the gateway).
"""
