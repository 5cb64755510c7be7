"""The adapter's only door into the world: the tool facade and the adapter session (SPEC b.5).

This module is all an adapter may import from the runtime (an import contract checks it).
It does not import the environment: the facade talks to a `WorldPort`, which the
environment implements.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple, Protocol

from cavbench.scenarios import ScenarioView
from cavbench.trace import JSON, JSONObject, Resource


class ToolStatus(StrEnum):
    OK = "OK"
    COMMITTED = "COMMITTED"
    AMBIGUOUS = "AMBIGUOUS"
    CONFLICT = "CONFLICT"
    IDEMPOTENT_REPLAY = "IDEMPOTENT_REPLAY"
    FAILED = "FAILED"
    NOT_FOUND = "NOT_FOUND"
    CREATED = "CREATED"
    CLARIFICATION_REQUESTED = "CLARIFICATION_REQUESTED"


RETRYABLE = frozenset({ToolStatus.CONFLICT, ToolStatus.AMBIGUOUS, ToolStatus.FAILED})

READ_TOOLS: Mapping[str, str] = {
    "order": "get_order",
    "payment": "get_payment",
    "inventory": "get_inventory",
    "account": "get_account",
    "slot": "get_service_slot",
    "reservation": "get_reservation",
    "carrier": "get_carrier_status",
    "accounts_aggregate": "get_accounts_aggregate",
}

TOOL_EFFECT_TYPE: Mapping[str, str] = {
    "cancel_order": "cancel_order",
    "cancel_order_item": "cancel_item",
    "issue_refund": "refund",
    "change_shipping_address": "change_address",
    "reserve_inventory": "reserve_inventory",
    "release_inventory": "release_inventory",
    "apply_account_credit": "apply_credit",
    "book_service_slot": "book_slot",
    "export_customer_data": "export_customer_data",
    "capture_payment": "capture_payment",
    "update_carrier_address": "update_carrier_address",
    "escalate_case": "escalate_case",
}


class CommitOutcome(NamedTuple):
    """What the environment's commit path returns."""

    status: ToolStatus
    state: Resource | None


class ToolResult(NamedTuple):
    """The result of one facade call, as the adapter sees it (an immutable record)."""

    status: ToolStatus
    data: Resource | JSONObject | None = None
    operation_id: str | None = None
    retryable: bool = False
    message: str | None = None


class WorldPort(Protocol):
    """What the facade needs from the environment (implemented by `Environment`)."""

    @property
    def scenario_id(self) -> str: ...

    def read(self, namespace: str, resource_id: str, tool_name: str) -> Resource: ...

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
    ) -> CommitOutcome: ...

    def status_check(self, idempotency_key: str) -> bool: ...

    def escalate(self, reason: str, logical_operation_id: str) -> None: ...

    def clarify(self, question: str) -> None: ...


class ToolFacade:
    """Read, write, check status, escalate, clarify. Every call is recorded by the environment."""

    __slots__ = ("_world",)

    def __init__(self, world: WorldPort) -> None:
        self._world = world

    def read(self, namespace: str, resource_id: str, tool_name: str | None = None) -> ToolResult:
        name = tool_name or READ_TOOLS.get(namespace) or f"get_{namespace}"
        value = self._world.read(namespace, str(resource_id), name)
        return ToolResult(ToolStatus.OK, data=value)

    def write(
        self,
        *,
        step_id: str,
        tool_name: str,
        namespace: str,
        resource_id: str,
        changes: Mapping[str, JSON],
        logical_operation_id: str,
        idempotency_key: str | None,
        args: JSONObject | None = None,
        expected_version: int | None = None,
        compensation_for: str | None = None,
    ) -> ToolResult:
        outcome = self._world.commit(
            step_id=step_id,
            tool_name=tool_name,
            effect_type=TOOL_EFFECT_TYPE.get(tool_name, tool_name),
            namespace=namespace,
            resource_id=str(resource_id),
            changes=changes,
            logical_operation_id=logical_operation_id,
            idempotency_key=idempotency_key,
            expected_version=expected_version,
            args=dict(args or {}),
            compensation_for=compensation_for,
        )
        return ToolResult(
            outcome.status,
            data=outcome.state,
            operation_id=logical_operation_id,
            retryable=outcome.status in RETRYABLE,
        )

    def status_check(self, idempotency_key: str) -> ToolResult:
        found = self._world.status_check(idempotency_key)
        return ToolResult(
            ToolStatus.COMMITTED if found else ToolStatus.NOT_FOUND, data={"found": found}
        )

    def escalate(self, reason: str, logical_operation_id: str) -> ToolResult:
        self._world.escalate(reason, logical_operation_id)
        return ToolResult(ToolStatus.CREATED, message=reason)

    def clarify(self, question: str) -> ToolResult:
        self._world.clarify(question)
        return ToolResult(ToolStatus.CLARIFICATION_REQUESTED, message=question)


class AdapterSession:
    """Exactly what an adapter gets: the scenario's view and the tools. Nothing else."""

    __slots__ = ("_repetition", "_scenario", "_seed", "_tools")

    def __init__(
        self, scenario: ScenarioView, tools: ToolFacade, *, seed: int = 0, repetition: int = 0
    ) -> None:
        self._scenario = scenario
        self._tools = tools
        self._seed = seed
        self._repetition = repetition

    @property
    def seed(self) -> int:
        """The episode's recorded seed (an out-of-process candidate is told it; a model-driven
        adapter keys its cache on it)."""
        return self._seed

    @property
    def repetition(self) -> int:
        """Which repetition of (scenario, seed) this is (so repeated runs are not cached as one)."""
        return self._repetition

    @property
    def scenario(self) -> ScenarioView:
        return self._scenario

    @property
    def tools(self) -> ToolFacade:
        return self._tools

    def clarify(self, question: str) -> ToolResult:
        return self._tools.clarify(question)

    def escalate(self, reason: str) -> ToolResult:
        """Escalate under the episode's one session-level logical id."""
        return self._tools.escalate(reason, f"escalate:{self._scenario.id}")
