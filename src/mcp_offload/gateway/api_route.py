"""`ApiCallRoute`: the Starlette route for the requests a provider serves as an API call (`Provider.route`, asked
through the registry in its order, so a provider registered later is served too). The provider and the call go to
the endpoint in the scope (`endpoint.API_CALL`)."""

from __future__ import annotations

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.gateway.asgi import incoming_request
from mcp_offload.gateway.endpoint import API_CALL
from mcp_offload.providers.registry import call_for_request


class ApiCallRoute(BaseRoute):
    def __init__(self, endpoint: ASGIApp) -> None:
        self.endpoint = endpoint

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http":
            served = call_for_request(incoming_request(scope))
            if served is not None:
                return Match.FULL, {API_CALL: served}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: object) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoint(scope, receive, send)

    def __repr__(self) -> str:
        return "ApiCallRoute()"
