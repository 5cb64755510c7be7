"""The MCP server over the session core (extra `[mcp]`, the SDK's low-level `Server`).

One `Server` per gateway session, so the tool list is the session's own. Every tool call is
one request envelope handled by the core: results carry the normalised status as structured
content; `ambiguous` (and `failed`, `rejected`) are ordinary results, only a refusal is a tool
error, and its text is ours. Transports: stdio (`serve_stdio`), and streamable HTTP on
loopback behind the session's bearer run token (`McpHttpGateway`).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from cavbench.gateway._core import GatewaySession, Rejection, RejectReason
from cavbench.gateway._errors import require_extra
from cavbench.gateway._serve import LoopbackServer
from cavbench.gateway._tools import CAPABILITIES_TOOL, envelope_for, render_result, tool_specs

require_extra("mcp", "mcp")

import mcp_types as types  # noqa: E402
from mcp.server import Server  # noqa: E402
from mcp.server.context import ServerRequestContext  # noqa: E402

SERVER_NAME = "cavbench-gateway"


def build_server(session: GatewaySession) -> Server[Any]:
    """A low-level MCP server exposing one gateway session's tools."""
    counter = itertools.count(1)
    scenario_id = session.scenario.id

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        specs = tool_specs(session.capabilities())
        return types.ListToolsResult(
            tools=[
                types.Tool(name=s.name, description=s.description, input_schema=s.input_schema)
                for s in specs
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == CAPABILITIES_TOOL:
            document = session.capabilities().model_dump(mode="json")
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=f"{len(document['operations'])} operations")
                ],
                structured_content=document,
            )
        envelope = envelope_for(
            params.name,
            params.arguments or {},
            token=session.run_token,
            correlation_id=f"mcp-{next(counter)}",
            scenario_id=scenario_id,
        )
        reply = session.handle(envelope)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=render_result(reply))],
            structured_content=reply.model_dump(mode="json"),
            is_error=isinstance(reply, Rejection),
        )

    return Server(SERVER_NAME, version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(session: GatewaySession) -> None:
    """Serve one session over this process's stdin/stdout until the client disconnects."""
    from mcp.server.stdio import stdio_server

    server = build_server(session)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class _RequireToken:
    """ASGI middleware: every HTTP request needs `Authorization: Bearer <run token>`."""

    def __init__(self, app: ASGIApp, session: GatewaySession) -> None:
        self._app = app
        self._session = session

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not self._session.check_token(token.strip()):
                body = (
                    Rejection(
                        reason=RejectReason.AUTHENTICATION_FAILED,
                        detail="missing or wrong run token (send Authorization: Bearer <CAVBENCH_RUN_TOKEN>)",
                    )
                    .model_dump_json()
                    .encode()
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


class McpHttpGateway:
    """One session's MCP server over streamable HTTP on loopback; the URL ends in `/mcp`."""

    def __init__(self, session: GatewaySession, *, host: str = "127.0.0.1", port: int = 0) -> None:
        app = build_server(session).streamable_http_app(host=host)
        self._server = LoopbackServer(_RequireToken(app, session), host=host, port=port)

    @property
    def url(self) -> str:
        return f"{self._server.url}/mcp"

    def start(self) -> McpHttpGateway:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()
