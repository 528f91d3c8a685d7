"""The MCP wiring: the server the transports serve, and the seams the front ends plug into.

Top to bottom (import-linter keeps the order):

- `offload_server`: the low-level MCP server: tool and resource handlers, notifications, per-connection scoping
- `savings_tap`: the extension that records what offloading saved
- `extension`: the tool-call middleware chain the proxy (and later front ends) plug into
- `change_notifier`: list-changed notifications to the connections that asked for them
- `scoping`: which session scope a connection or request gets
- `tools`: the retrieval tools (specs, schemas, argument checks, calls, replies); the compactor calls them too
- `resources` and `content_blocks`: stored outputs as MCP resources, and MCP content blocks read as text or bytes

Nothing here knows a front end: the proxy and the compactor import this package, never the other way round.
"""
