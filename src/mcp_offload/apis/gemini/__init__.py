"""The Gemini API (`generateContent` / `streamGenerateContent`), as the gateway speaks it.

- `routes`: which paths are Gemini's, the model and method in a path, the API key of a request;
- `messages`: the `contents` format (`functionCall` / `functionResponse` parts) the cache-safe rewrite reads;
- `history`: the request shape (`contents`, `systemInstruction`, `tools[].functionDeclarations`);
- `tools`: the retrieval tools as `functionDeclarations`;
- `dialect`: answers and streams (`data: {GenerateContentResponse}` events) for the transparent retrieval loop;
- `errors`: Gemini's error document (`{"error": {"code", "message", "status"}}`).

The modules import only what their users' layer may: `messages` and `history` nothing of the gateway, `dialect`
the gateway's stream protocol. This `__init__` imports nothing.
"""
