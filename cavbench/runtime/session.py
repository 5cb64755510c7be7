"""The adapter's only door into the world: the tool facade and the adapter session (SPEC b.5).

This module is all an adapter may import from the runtime (an import contract checks it).
It does not import the environment: the facade talks to a `WorldPort`, which the
environment implements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple, Protocol

from cavbench.errors import ToolCallError
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


_INT64 = (-(2**63), 2**63 - 1)
_new = tuple.__new__  # named tuples without the generated `__new__`'s frame (hot path)
_OK = ToolStatus.OK


def _json_problem(value: object, where: str, depth: int = 0) -> str | None:
    """Why `value` cannot be recorded as JSON in the tables (None if it can)."""
    kind = type(value)
    if kind is str:
        if not value.isascii():  # type: ignore[attr-defined]
            try:
                value.encode("utf-8")  # type: ignore[attr-defined]
            except UnicodeEncodeError:
                return f"{where}: a string with a lone surrogate"
        return None
    if kind is bool or value is None:
        return None
    if kind is int:
        lo, hi = _INT64
        return None if lo <= value <= hi else f"{where}: integer {value} outside 64 bits"  # type: ignore[operator]
    if kind is float:
        finite = math.isfinite(value)  # type: ignore[arg-type]
        return None if finite else f"{where}: {value!r} is not a JSON number"
    if depth > 64:
        return f"{where}: nested more than 64 levels"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if type(key) is not str:
                return f"{where}: key {key!r} is not a string"
            problem = _json_problem(item, f"{where}.{key}", depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
        return None
    return f"{where}: a {kind.__name__} is not JSON"


def _require(value: object, where: str, *kinds: type) -> None:
    if type(value) not in kinds:
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ToolCallError(f"{where}: expected {names}, got {type(value).__name__}")


def _check_json(value: object, where: str) -> None:
    problem = _json_problem(value, where)
    if problem:
        raise ToolCallError(f"{problem} (fix: pass plain JSON values)")


class ToolFacade:
    """Read, write, check status, escalate, clarify. Every call is recorded by the environment."""

    __slots__ = ("_checked", "_world")

    def __init__(self, world: WorldPort, *, checked: bool = True) -> None:
        self._world = world
        # `checked=False` only for the trusted baseline engine, whose arguments come from a
        # validated scenario document (the environment decides; see the runner).
        self._checked = checked

    def _refused(self, call: str, exc: ToolCallError) -> ToolCallError:
        """Record the refused call on the episode (so it counts even if the adapter goes on)
        and hand back the error to raise."""
        refuse = getattr(self._world, "refuse", None)  # a remote world may not record it
        if refuse is not None:
            refuse(call, str(exc))
        return exc

    def read(self, namespace: str, resource_id: str, tool_name: str | None = None) -> ToolResult:
        if self._checked:
            try:
                self._check_read(namespace, resource_id, tool_name)
            except ToolCallError as exc:
                raise self._refused("read", exc) from None
        name = tool_name or READ_TOOLS.get(namespace) or f"get_{namespace}"
        value = self._world.read(namespace, str(resource_id), name)
        return _new(ToolResult, (_OK, value, None, False, None))

    @staticmethod
    def _check_read(namespace: str, resource_id: str, tool_name: str | None) -> None:
        if type(namespace) is not str or not namespace.isascii():
            _require(namespace, "read: namespace", str)
            _check_json(namespace, "read: namespace")
        if tool_name is not None:
            _require(tool_name, "read: tool_name", str)
            _check_json(tool_name, "read: tool_name")
        if type(resource_id) is not str or not resource_id.isascii():
            _check_json(str(resource_id), "read: resource_id")

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
        if self._checked:
            self._check_write(
                step_id,
                tool_name,
                namespace,
                resource_id,
                changes,
                logical_operation_id,
                idempotency_key,
                args,
                expected_version,
                compensation_for,
            )
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
        status = outcome.status
        return _new(
            ToolResult, (status, outcome.state, logical_operation_id, status in RETRYABLE, None)
        )

    def _check_write(
        self,
        step_id: str,
        tool_name: str,
        namespace: str,
        resource_id: str,
        changes: Mapping[str, JSON],
        logical_operation_id: str,
        idempotency_key: str | None,
        args: JSONObject | None,
        expected_version: int | None,
        compensation_for: str | None,
    ) -> None:
        try:
            # Whatever reaches the world is recorded in typed tables: refuse what cannot be.
            # One cheap test for the common case; the detailed checks name the culprit.
            if not (
                type(step_id) is str
                and type(tool_name) is str
                and type(namespace) is str
                and type(logical_operation_id) is str
                and (idempotency_key is None or type(idempotency_key) is str)
                and (compensation_for is None or type(compensation_for) is str)
                and (expected_version is None or type(expected_version) is int)
                and (step_id + tool_name + namespace + logical_operation_id).isascii()
                and (idempotency_key is None or idempotency_key.isascii())
            ):
                for where, value in (
                    ("step_id", step_id),
                    ("tool_name", tool_name),
                    ("namespace", namespace),
                    ("logical_operation_id", logical_operation_id),
                ):
                    _require(value, f"write: {where}", str)
                _require(idempotency_key, "write: idempotency_key", str, type(None))
                _require(compensation_for, "write: compensation_for", str, type(None))
                _require(expected_version, "write: expected_version", int, type(None))
                ids = [step_id, tool_name, namespace, logical_operation_id, idempotency_key]
                _check_json([*ids, compensation_for, expected_version], "write")
            if not isinstance(changes, Mapping):
                raise ToolCallError(
                    f"write: changes must be an object, got {type(changes).__name__}"
                )
            _check_json(changes, "write: changes")
            if args:
                _check_json(args, "write: args")
            if type(resource_id) is not str or not resource_id.isascii():
                _check_json(str(resource_id), "write: resource_id")
        except ToolCallError as exc:
            raise self._refused("write", exc) from None

    def status_check(self, idempotency_key: str) -> ToolResult:
        try:
            _require(idempotency_key, "status_check: idempotency_key", str)
            _check_json(idempotency_key, "status_check: idempotency_key")
        except ToolCallError as exc:
            raise self._refused("status_check", exc) from None
        found = self._world.status_check(idempotency_key)
        return ToolResult(
            ToolStatus.COMMITTED if found else ToolStatus.NOT_FOUND, data={"found": found}
        )

    def escalate(self, reason: str, logical_operation_id: str) -> ToolResult:
        try:
            _require(reason, "escalate: reason", str)
            _require(logical_operation_id, "escalate: logical_operation_id", str)
            _check_json([reason, logical_operation_id], "escalate")
        except ToolCallError as exc:
            raise self._refused("escalate", exc) from None
        self._world.escalate(reason, logical_operation_id)
        return ToolResult(ToolStatus.CREATED, message=reason)

    def clarify(self, question: str) -> ToolResult:
        try:
            _require(question, "clarify: question", str)
            _check_json(question, "clarify: question")
        except ToolCallError as exc:
            raise self._refused("clarify", exc) from None
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
