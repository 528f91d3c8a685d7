"""`ApiRoute`: a Starlette route for the requests one LLM API serves as its calls (`LlmApi.route`: fixed POST paths,
or Gemini's `models/{model}:generateContent`), so the gateway's route table names each API. The API and what its
path says go to the endpoint in the scope (`endpoint.API_CALL`)."""

from __future__ import annotations

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.apis.base import LlmApi
from mcp_offload.gateway.endpoint import API_CALL


class ApiRoute(BaseRoute):
    def __init__(self, api: LlmApi, endpoint: ASGIApp) -> None:
        self.api = api
        self.endpoint = endpoint

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http":
            route = self.api.route(scope["method"], scope["path"])
            if route is not None:
                return Match.FULL, {API_CALL: (self.api, route)}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: object) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoint(scope, receive, send)

    def __repr__(self) -> str:
        return f"ApiRoute({self.api.name})"
