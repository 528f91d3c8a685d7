"""The in-process core: ingest (content → kind, index, preview, tokens → store), read, search, query, list.

- `pipeline`: one tool call answered in plain values (`run_tool` -> `ToolAnswer`: text, is_error, the result
  record), and the one translation of a model-facing error into an answer; every front end converts the answer
- `tools`: the five tools (`ToolSpec`: arguments, handler, description, schema) and a call's `CallContext`
- `api`: the retrieval API the tools, the compactor and library users call (`offload`, `read`, `search`, `query`,
  `list_outputs`)
- `render`: the text the model reads for each result
- `ingest`: storing one output: kind detection, the offload-time index, the preview, the token counts
- `results`, `services`, `progress`, `output_uri`: result models, the shared services (store, tokens, jq pool,
  savings), progress heartbeats, and the URI of a stored output

The core never imports the MCP SDK.
"""
