"""A Python client of the gateway: any in-process `ExecutionAdapter` becomes an
out-of-process candidate, speaking envelope 1.0 over REST or MCP.

`remote_session(channel)` builds an ordinary `AdapterSession` whose tool facade sends one
request per call over the channel, with the scenario view taken from the capability
document (what the candidate was sent, nothing more). The parity tests run the five
baseline profiles through it; it is also a reference client for candidate authors.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cavbench.adapters import AdapterResult, ExecutionAdapter
from cavbench.gateway._core import ENVELOPE_VERSION, Action, GatewaySession, OpStatus
from cavbench.gateway._errors import GatewayError
from cavbench.runtime.session import AdapterSession, CommitOutcome, ToolFacade, ToolStatus
from cavbench.scenarios import ScenarioView, StepKind
from cavbench.trace import JSON, JSONObject, Resource

_TOOL_STATUS: Mapping[str, ToolStatus] = {
    OpStatus.COMMITTED: ToolStatus.COMMITTED,
    OpStatus.AMBIGUOUS: ToolStatus.AMBIGUOUS,
    OpStatus.FAILED: ToolStatus.FAILED,
}


class Channel(Protocol):
    """How a client reaches one gateway session."""

    def capabilities(self) -> dict[str, Any]: ...

    def send(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Send one request envelope; return the reply body (response or rejection)."""
        ...


class GatewayWorld:
    """A `WorldPort` whose every call is one gateway request."""

    def __init__(self, channel: Channel, view: ScenarioView, actor_id: str = "candidate") -> None:
        self._channel = channel
        self._view = view
        self._actor = actor_id
        self._seq = itertools.count(1)
        self._compensations = frozenset(
            s.step_id for s in view.plan.steps if s.kind is StepKind.COMPENSATE
        )
        self._operation_of_key: dict[str, str] = {}

    @property
    def scenario_id(self) -> str:
        return self._view.id

    def _send(
        self,
        action: Action,
        operation_id: str,
        resource: dict[str, str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        envelope: dict[str, Any] = {
            "envelope_version": ENVELOPE_VERSION,
            "operation_id": operation_id,
            "correlation_id": f"c-{next(self._seq)}",
            "actor_id": self._actor,
            "action": action.value,
            "resource": resource or {"namespace": "session", "resource_id": self._view.id},
            **fields,
        }
        reply = self._channel.send(envelope)
        if "reason" in reply:
            raise GatewayError(
                f"gateway refused {action.value} {operation_id!r}: {reply['reason']}: "
                f"{reply.get('detail')}"
            )
        return reply

    def read(self, namespace: str, resource_id: str, tool_name: str) -> Resource:
        reply = self._send(
            Action.READ,
            f"read:{namespace}:{resource_id}",
            {"namespace": namespace, "resource_id": resource_id},
        )
        data = reply.get("data")
        return data if isinstance(data, dict) else {}

    def commit(
        self,
        *,
        step_id: str,
        tool_name: str,
        effect_type: str,
        namespace: str,
        resource_id: str,
        changes: Mapping[str, JSON],
        logical_operation_id: str,
        idempotency_key: str | None,
        expected_version: int | None,
        args: JSONObject,
        compensation_for: str | None,
    ) -> CommitOutcome:
        action = Action.COMPENSATE if step_id in self._compensations else Action.WRITE
        parameters: dict[str, Any] = {"step_id": step_id, "changes": dict(changes), "args": args}
        if compensation_for is not None:
            parameters["compensation_for"] = compensation_for
        if idempotency_key is not None:
            self._operation_of_key[idempotency_key] = logical_operation_id
        reply = self._send(
            action,
            logical_operation_id,
            {"namespace": namespace, "resource_id": resource_id, "tool_name": tool_name},
            idempotency_key=idempotency_key,
            expected_version=expected_version,
            parameters=parameters,
        )
        status = reply["status"]
        tool_status = _TOOL_STATUS.get(status)
        if status == OpStatus.REJECTED:
            replay = reply.get("message") == ToolStatus.IDEMPOTENT_REPLAY.value.lower()
            tool_status = ToolStatus.IDEMPOTENT_REPLAY if replay else ToolStatus.CONFLICT
        data = reply.get("data")
        return CommitOutcome(
            tool_status or ToolStatus.FAILED, data if isinstance(data, dict) else None
        )

    def status_check(self, idempotency_key: str) -> bool:
        operation = self._operation_of_key.get(idempotency_key, idempotency_key)
        reply = self._send(Action.STATUS_CHECK, operation, idempotency_key=idempotency_key)
        return bool(reply["status"] == OpStatus.OK)

    def escalate(self, reason: str, logical_operation_id: str) -> None:
        self._send(Action.ESCALATE, logical_operation_id, parameters={"reason": reason})

    def clarify(self, question: str) -> None:
        self._send(Action.CLARIFY, f"clarify:{next(self._seq)}", parameters={"question": question})

    def report(self, result: AdapterResult, adapter: ExecutionAdapter) -> None:
        status = result.completion_status
        parameters: dict[str, Any] = {
            **dict(result.metadata),
            "adapter_name": adapter.name,
            "adapter_version": adapter.version,
            "final_message": result.final_message,
            "completion_status": str(getattr(status, "value", status)),
        }
        self._send(Action.REPORT, f"report:{self._view.id}", parameters=parameters)


def remote_session(channel: Channel) -> tuple[AdapterSession, GatewayWorld]:
    """An adapter session over a gateway channel, with the view from its capability document."""
    document = channel.capabilities()
    view = ScenarioView.model_validate(document["view"])
    world = GatewayWorld(channel, view)
    return AdapterSession(view, ToolFacade(world)), world


def run_remote(adapter: ExecutionAdapter, channel: Channel) -> None:
    """Run `adapter` as a candidate over `channel` and send its report."""
    session, world = remote_session(channel)
    result = adapter.run(session)
    world.report(result, adapter)


Connect = Callable[[GatewaySession], tuple[Channel, Callable[[], None]]]
"""Serve a gateway session; return a channel to it and a function that closes it."""


@dataclass(frozen=True, slots=True)
class ViaGateway:
    """An `ExecutionAdapter` that serves its session through a gateway and runs `inner` as the
    candidate on the other side of the channel `connect` opens (parity tests, benchmarks)."""

    inner: ExecutionAdapter
    connect: Connect

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def version(self) -> str:
        return self.inner.version

    def run(self, session: AdapterSession) -> AdapterResult:
        gateway = GatewaySession(session)
        channel, done = self.connect(gateway)
        try:
            run_remote(self.inner, channel)
        finally:
            done()
        return gateway.result()


class HttpChannel:
    """A REST channel (httpx; `rest` extra) to one session's base URL."""

    def __init__(self, base_url: str, token: str, client: Any | None = None) -> None:
        from cavbench.gateway._errors import require_extra

        httpx = require_extra("httpx", "rest")
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._client = client if client is not None else httpx.Client(timeout=30.0)

    def capabilities(self) -> dict[str, Any]:
        response = self._client.get(f"{self._base}/capabilities")
        body: dict[str, Any] = response.json()
        return body

    def send(self, envelope: dict[str, Any]) -> dict[str, Any]:
        route = "report" if envelope.get("action") == Action.REPORT else "operations"
        response = self._client.post(f"{self._base}/{route}", json=envelope, headers=self._headers)
        body: dict[str, Any] = response.json()
        return body


class McpChannel:
    """An MCP channel: tool calls through a connected `mcp.Client`, driven from synchronous
    code through an anyio blocking portal (`mcp` extra)."""

    def __init__(self, portal: Any, client: Any) -> None:
        self._portal = portal
        self._client = client

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self._portal.call(self._client.call_tool, name, arguments)
        structured = result.structured_content
        if not isinstance(structured, dict):
            raise GatewayError(f"MCP tool {name!r} returned no structured content")
        return structured

    def capabilities(self) -> dict[str, Any]:
        return self._call("capabilities", {})

    def send(self, envelope: dict[str, Any]) -> dict[str, Any]:
        from cavbench.gateway._tools import envelope_to_arguments

        name, arguments = envelope_to_arguments(envelope)
        return self._call(name, arguments)
