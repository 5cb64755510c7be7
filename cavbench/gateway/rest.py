"""The REST gateway (CAV-Bench gateway contract, envelope 1.0) over the session core.

One server hosts any number of sessions, each under its own base URL
`http://127.0.0.1:<port>/s/<session_id>` (what a candidate gets as `CAVBENCH_GATEWAY_URL`);
below it the routes are exactly the contract's. Needs the `rest` extra (starlette, uvicorn).
Handlers are `async` and call the session synchronously, so requests are handled one at a
time, as in the reference, and the trace order is the acceptance order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from cavbench.gateway._core import (
    ENVELOPE_VERSION,
    CapabilityDocument,
    GatewaySession,
    OpStatus,
    Rejection,
    RejectReason,
    Reply,
    RequestEnvelope,
    ResponseEnvelope,
)
from cavbench.gateway._errors import require_extra
from cavbench.gateway._serve import LoopbackServer

require_extra("starlette", "rest")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

MAX_BODY_BYTES = 1_000_000

STATUS_HTTP: Mapping[OpStatus, int] = {
    OpStatus.REJECTED: 409,
    OpStatus.FAILED: 502,
    OpStatus.AMBIGUOUS: 504,
}
"""HTTP status of an accepted request; any other normalised status is 200."""

REJECTION_HTTP: Mapping[RejectReason, int] = {
    RejectReason.MALFORMED_ENVELOPE: 400,
    RejectReason.AUTHENTICATION_FAILED: 401,
    RejectReason.UNKNOWN_OPERATION: 404,
    RejectReason.UNKNOWN_OPERATION_ID: 404,
    RejectReason.CAPABILITY_VIOLATION: 404,
    RejectReason.SESSION_CLOSED: 410,
    RejectReason.UNKNOWN_SESSION: 404,
}


def http_status(reply: Reply) -> int:
    if isinstance(reply, Rejection):
        return REJECTION_HTTP[reply.reason]
    return STATUS_HTTP.get(reply.status, 200)


class GatewayHub:
    """The sessions a server hosts, by session id (thread-safe)."""

    def __init__(self) -> None:
        self._sessions: dict[str, GatewaySession] = {}
        self._lock = threading.Lock()

    def add(self, session: GatewaySession) -> None:
        with self._lock:
            self._sessions[session.session_id] = session

    def remove(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def get(self, session_id: str | None) -> GatewaySession | None:
        """The session by id; with no id, the only session hosted (else None)."""
        with self._lock:
            if session_id is None:
                only = list(self._sessions.values())
                return only[0] if len(only) == 1 else None
            return self._sessions.get(session_id)


def _json(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def _reply(reply: Reply) -> Response:
    return _json(reply, http_status(reply))


def _rejection(reason: RejectReason, detail: str, status: int) -> Response:
    return _json(Rejection(reason=reason, detail=detail), status)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def build_app(hub: GatewayHub) -> Starlette:
    """The ASGI app serving every session of `hub`."""

    def session_of(request: Request) -> GatewaySession | Response:
        session_id = request.path_params.get("session_id")
        session = hub.get(session_id)
        if session is None:
            detail = (
                f"no session {session_id!r} on this gateway"
                if session_id is not None
                else "this gateway hosts more than one session (or none); use its base URL "
                "/s/<session_id> (CAVBENCH_GATEWAY_URL)"
            )
            return _rejection(RejectReason.UNKNOWN_SESSION, detail, 404)
        return session

    async def capabilities(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        return _json(session.capabilities())

    async def post_envelope(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            return _rejection(
                RejectReason.MALFORMED_ENVELOPE, f"body larger than {MAX_BODY_BYTES} bytes", 400
            )
        try:
            body: Any = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            return _rejection(RejectReason.MALFORMED_ENVELOPE, f"invalid JSON body: {exc}", 400)
        if (
            request.url.path.endswith("/report")
            and isinstance(body, dict)
            and body.get("action", "report") != "report"
        ):
            return _rejection(
                RejectReason.MALFORMED_ENVELOPE,
                f"POST /report takes action 'report', got {body.get('action')!r}",
                400,
            )
        return _reply(session.handle(body, bearer=_bearer(request)))

    async def operation_status(request: Request) -> Response:
        session = session_of(request)
        if isinstance(session, Response):
            return session
        operation_id = request.path_params["operation_id"]
        body: dict[str, Any] = {
            "envelope_version": ENVELOPE_VERSION,
            "operation_id": operation_id,
            "correlation_id": f"reconcile:{operation_id}",
            "actor_id": "candidate",
            "action": "status_check",
            "resource": {"namespace": "operation", "resource_id": operation_id},
        }
        return _reply(session.handle(body, bearer=_bearer(request)))

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def not_found(request: Request, exc: Exception) -> Response:
        return _rejection(
            RejectReason.UNKNOWN_OPERATION,
            f"no such route {request.method} {request.url.path}",
            404,
        )

    routes = [Route("/openapi.json", openapi, methods=["GET"])]
    # Under each session's base URL; and at the root too, for the only session of a server
    # (as the reference served it), so a client that drops the base path still works.
    for base in ("/s/{session_id}", ""):
        routes += [
            Route(f"{base}/capabilities", capabilities, methods=["GET"]),
            Route(f"{base}/operations", post_envelope, methods=["POST"]),
            Route(f"{base}/operations/{{operation_id}}", operation_status, methods=["GET"]),
            Route(f"{base}/report", post_envelope, methods=["POST"]),
        ]
    routes.append(Route("/s/{session_id}/openapi.json", openapi, methods=["GET"]))
    return Starlette(routes=routes, exception_handlers={404: not_found})


class RestGateway:
    """A running REST gateway: one loopback server, many sessions."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.hub = GatewayHub()
        self._server = LoopbackServer(build_app(self.hub), host=host, port=port)

    def start(self) -> RestGateway:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> RestGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self._server.url

    def session_url(self, session: GatewaySession) -> str:
        return f"{self._server.url}/s/{session.session_id}"

    def open(self, session: GatewaySession) -> str:
        """Host `session`; returns its base URL."""
        self.hub.add(session)
        return self.session_url(session)

    def close(self, session: GatewaySession) -> None:
        """Close `session` and stop hosting it."""
        session.close()
        self.hub.remove(session.session_id)


# -- OpenAPI -------------------------------------------------------------------------------
_REF = "#/components/schemas/{model}"


def _content(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model=model.__name__)}}},
    }


def _envelope_responses(extra: Mapping[str, str]) -> dict[str, Any]:
    responses = {
        "200": _content(ResponseEnvelope, "Accepted: ok, committed, created, accepted, …"),
        "400": _content(Rejection, "malformed_envelope"),
        "401": _content(Rejection, "authentication_failed (missing or wrong run token)"),
        "404": _content(
            Rejection,
            "unknown_session, unknown_operation, unknown_operation_id, capability_violation",
        ),
        "410": _content(Rejection, "session_closed"),
    }
    for code, text in extra.items():
        responses[code] = _content(ResponseEnvelope, text)
    return responses


_WRITE_OUTCOMES = {
    "409": "rejected (version conflict or idempotent replay)",
    "502": "failed",
    "504": "ambiguous: the write may or may not have committed; reconcile by status check",
}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the REST gateway, generated from the wire models."""
    _, defs = models_json_schema(
        [
            (RequestEnvelope, "validation"),
            (ResponseEnvelope, "serialization"),
            (Rejection, "serialization"),
            (CapabilityDocument, "serialization"),
        ],
        ref_template=_REF,
    )
    session_id = {
        "name": "session_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    security: list[dict[str, list[str]]] = [{"runToken": []}]
    body = {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model="RequestEnvelope")}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cavbench gateway (CAV-Bench gateway contract)",
            "version": ENVELOPE_VERSION,
            "description": "One session = one episode of one (scenario, seed). A candidate gets "
            "its base URL (…/s/{session_id}) as CAVBENCH_GATEWAY_URL and its run token as "
            "CAVBENCH_RUN_TOKEN. See docs/external-agents.md.",
        },
        "paths": {
            "/s/{session_id}/capabilities": {
                "get": {
                    "operationId": "capabilities",
                    "summary": "The session's advertised operations (no auth, logged).",
                    "parameters": [session_id],
                    "responses": {
                        "200": _content(CapabilityDocument, "the advertisement"),
                        "404": _content(Rejection, "unknown_session"),
                    },
                }
            },
            "/s/{session_id}/operations": {
                "post": {
                    "operationId": "operate",
                    "summary": "read, write, compensate, status_check, escalate, clarify: one facade call.",
                    "parameters": [session_id],
                    "security": security,
                    "requestBody": body,
                    "responses": _envelope_responses(_WRITE_OUTCOMES),
                }
            },
            "/s/{session_id}/operations/{operation_id}": {
                "get": {
                    "operationId": "operationStatus",
                    "summary": "Status check by operation id (reconciliation).",
                    "parameters": [
                        session_id,
                        {
                            "name": "operation_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "minLength": 1},
                        },
                    ],
                    "security": security,
                    "responses": _envelope_responses({}),
                }
            },
            "/s/{session_id}/report": {
                "post": {
                    "operationId": "report",
                    "summary": "The candidate's final report (untrusted; no facade call).",
                    "parameters": [session_id],
                    "security": security,
                    "requestBody": body,
                    "responses": _envelope_responses({}),
                }
            },
        },
        "components": {
            "schemas": defs["$defs"],
            "securitySchemes": {"runToken": {"type": "http", "scheme": "bearer"}},
        },
    }


if __name__ == "__main__":  # print the OpenAPI document (docs/gateway-openapi.json)
    print(json.dumps(openapi_document(), indent=2))
