"""The transport-free session core of the gateway (CAV-Bench gateway contract, envelope 1.0).

One `GatewaySession` = one adapter session (scenario view + tool facade) for one
(scenario, seed). It stands where an in-process adapter stands: it sees the view and the
facade and nothing else, so it can never advertise oracle content or write around the facade.

Invariants:
- the capability set is derived once from the view and used both to advertise and to enforce;
- checks run in a fixed order (closed -> schema -> token -> action -> report -> capability) and
  any rejection makes zero facade calls; one accepted request makes exactly one facade call
  (`report` makes none): no batching, retry, reconciliation or invented ids;
- requests are handled one at a time (a lock), so the trace order is the acceptance order;
- the session log is append-only and redacted by construction: it stores no token and no
  request parameters, only what happened;
- the candidate's report is untrusted; it becomes an ordinary `AdapterResult`.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from cavbench.adapters import AdapterResult
from cavbench.errors import CavBenchError
from cavbench.runtime.session import READ_TOOLS, AdapterSession, ToolResult, ToolStatus
from cavbench.scenarios import PlannedStep, ScenarioView, StepKind
from cavbench.trace import JSONObject

ENVELOPE_VERSION: Literal["1.0"] = "1.0"

NonEmpty = Annotated[StrictStr, Field(min_length=1)]


class Action(StrEnum):
    """The actions of envelope 1.0."""

    READ = "read"
    WRITE = "write"
    COMPENSATE = "compensate"
    STATUS_CHECK = "status_check"
    ESCALATE = "escalate"
    CLARIFY = "clarify"
    REPORT = "report"


RESOURCE_ACTIONS = frozenset({Action.READ, Action.WRITE, Action.COMPENSATE})
"""Actions scoped to a resource, checked against the capability set."""


class OpStatus(StrEnum):
    """The normalised status of an accepted request."""

    OK = "ok"
    COMMITTED = "committed"
    CREATED = "created"
    ACCEPTED = "accepted"
    CLARIFICATION_REQUESTED = "clarification_requested"
    NOT_FOUND = "not_found"
    REJECTED = "rejected"
    FAILED = "failed"
    AMBIGUOUS = "ambiguous"


class RejectReason(StrEnum):
    """Why a request was refused (no facade call was made)."""

    MALFORMED_ENVELOPE = "malformed_envelope"
    AUTHENTICATION_FAILED = "authentication_failed"
    UNKNOWN_OPERATION = "unknown_operation"
    CAPABILITY_VIOLATION = "capability_violation"
    UNKNOWN_OPERATION_ID = "unknown_operation_id"
    SESSION_CLOSED = "session_closed"
    """An extension of the contract: the episode was finalised; nothing more is accepted."""
    UNKNOWN_SESSION = "unknown_session"
    """An extension of the contract: no such session on this server (a route under it)."""


_WRITE_STATUS: Mapping[ToolStatus, OpStatus] = {
    ToolStatus.COMMITTED: OpStatus.COMMITTED,
    ToolStatus.AMBIGUOUS: OpStatus.AMBIGUOUS,
    ToolStatus.FAILED: OpStatus.FAILED,
    ToolStatus.CONFLICT: OpStatus.REJECTED,
    ToolStatus.IDEMPOTENT_REPLAY: OpStatus.REJECTED,
}


# -- wire models ---------------------------------------------------------------------------
class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ResourceRef(_Wire):
    """What a request acts on."""

    namespace: NonEmpty
    resource_id: NonEmpty
    tool_name: NonEmpty | None = None
    """The tool of a write or compensation (default: the action's name)."""


class RequestEnvelope(_Wire):
    """A candidate's request (envelope 1.0; no other properties allowed)."""

    envelope_version: Literal["1.0"]
    session_token: NonEmpty
    """The run token; filled from the `Authorization: Bearer` header when omitted."""
    operation_id: NonEmpty
    """The candidate's logical operation id, passed to the facade unchanged."""
    idempotency_key: StrictStr | None = None
    """The candidate's dedup key, passed to the facade unchanged."""
    correlation_id: NonEmpty
    """Unique per wire request; echoed back."""
    actor_id: NonEmpty
    action: NonEmpty
    resource: ResourceRef
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Per action: write/compensate `step_id`, `changes`, `args` (+ `compensation_for`);
    escalate `reason`; clarify `question`; report `completion_status`, `final_message`, …"""
    expected_version: StrictInt | None = None
    """A version guard on a write."""


class _Params(BaseModel):
    # Parameters may carry other keys (the contract closes only the top level and `resource`).
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


class WriteParams(_Params):
    step_id: NonEmpty | None = None
    changes: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)
    compensation_for: NonEmpty | None = None


class EscalateParams(_Params):
    reason: StrictStr = "candidate-requested escalation"


class ClarifyParams(_Params):
    question: StrictStr = ""


_PARAMETERS: Mapping[Action, type[_Params]] = {
    Action.WRITE: WriteParams,
    Action.COMPENSATE: WriteParams,
    Action.ESCALATE: EscalateParams,
    Action.CLARIFY: ClarifyParams,
}


class ResponseEnvelope(_Wire):
    """The answer to an accepted request."""

    envelope_version: Literal["1.0"] = ENVELOPE_VERSION
    correlation_id: str
    operation_id: str
    status: OpStatus
    data: dict[str, Any] | None = None
    message: str | None = None


class Rejection(_Wire):
    """The answer to a refused request (no facade call was made)."""

    envelope_version: Literal["1.0"] = ENVELOPE_VERSION
    correlation_id: str | None = None
    reason: RejectReason
    detail: str


class OperationDescriptor(_Wire):
    """One advertised (and enforced) operation."""

    action: Action
    namespace: str | None = None
    resource_id: str | None = None
    tool_name: str | None = None
    description: str


class CapabilityDocument(_Wire):
    """`GET /capabilities`: the session's advertisement, derived from the view only."""

    envelope_version: Literal["1.0"] = ENVELOPE_VERSION
    session_id: str
    scenario_id: str
    scenario_title: str
    toolset: tuple[str, ...]
    operations: tuple[OperationDescriptor, ...]
    view: dict[str, Any] = Field(default_factory=dict)
    """An extension of the contract: the adapter-visible scenario view (request, principal,
    policy, plan), exactly what an in-process adapter gets; never oracle content."""


# -- capabilities --------------------------------------------------------------------------
_SESSION_ACTIONS: Sequence[tuple[Action, str]] = (
    (Action.STATUS_CHECK, "Check whether an earlier write (by idempotency key) committed."),
    (Action.ESCALATE, "Escalate the case to a human."),
    (Action.CLARIFY, "Ask the user a clarifying question."),
    (Action.REPORT, "Send the final report (untrusted; ends nothing by itself)."),
)

OpKey = tuple[Action, str | None, str, str]
"""(action, tool_name, namespace, resource_id) of a resource-scoped operation."""


def _plan_steps(view: ScenarioView) -> list[PlannedStep]:
    """Top-level steps in plan order, each followed by its `narrowed` alternative.

    The reference left `narrowed` steps out, so over REST a gated write could not take its
    corrective form (IA-07, IA-10); the narrowed step is part of the adapter-visible view, so
    advertising it reveals nothing of the oracle.
    """
    out: list[PlannedStep] = []
    for step in view.plan.steps:
        current: PlannedStep | None = step
        while current is not None:
            out.append(current)
            current = current.narrowed
    return out


def derive_operations(view: ScenarioView) -> tuple[OperationDescriptor, ...]:
    """The session's operations: session-level actions, then one read per touched resource
    (first-touched order), then one descriptor per distinct write/compensate key."""
    reads: dict[tuple[str, str], OperationDescriptor] = {}
    writes: dict[OpKey, OperationDescriptor] = {}
    for step in _plan_steps(view):
        if step.kind not in (StepKind.READ, StepKind.WRITE, StepKind.COMPENSATE):
            continue
        if step.namespace is None or step.resource_id is None:
            continue
        target = (step.namespace, step.resource_id)
        if target not in reads:
            reads[target] = OperationDescriptor(
                action=Action.READ,
                namespace=step.namespace,
                resource_id=step.resource_id,
                tool_name=READ_TOOLS.get(step.namespace, f"get_{step.namespace}"),
                description=f"Read {step.namespace} {step.resource_id}.",
            )
        if step.kind is StepKind.READ or step.tool_name is None:
            continue
        action = Action.WRITE if step.kind is StepKind.WRITE else Action.COMPENSATE
        key: OpKey = (action, step.tool_name, step.namespace, step.resource_id)
        if key not in writes:
            writes[key] = OperationDescriptor(
                action=action,
                namespace=step.namespace,
                resource_id=step.resource_id,
                tool_name=step.tool_name,
                description=f"{action.value.capitalize()}: {step.tool_name} on "
                f"{step.namespace} {step.resource_id}.",
            )
    session = tuple(OperationDescriptor(action=a, description=d) for a, d in _SESSION_ACTIONS)
    return (*session, *reads.values(), *writes.values())


def _op_key(descriptor: OperationDescriptor) -> OpKey:
    return (
        descriptor.action,
        None if descriptor.action is Action.READ else descriptor.tool_name,
        descriptor.namespace or "",
        descriptor.resource_id or "",
    )


# -- log -----------------------------------------------------------------------------------
class LogKind(StrEnum):
    REQUEST = "request"
    REJECTION = "rejection"
    DISCOVERY = "discovery"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One line of the session log. Carries no token and no request parameters."""

    seq: int
    kind: LogKind
    action: str | None
    correlation_id: str | None
    operation_id: str | None
    status: str | None
    """The normalised status, or the rejection reason."""
    facade_call: bool
    detail: str | None = None


Reply = ResponseEnvelope | Rejection


def _error_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(body)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _as_data(result: ToolResult) -> dict[str, Any] | None:
    return dict(result.data) if isinstance(result.data, dict) else None


# -- the session ---------------------------------------------------------------------------
class GatewaySession:
    """One episode's gateway: handle requests, keep the log, hand back the report."""

    def __init__(self, session: AdapterSession, *, token: str | None = None) -> None:
        self._session = session
        self.session_id = f"sess-{secrets.token_hex(8)}"
        self.run_token = token or secrets.token_urlsafe(24)
        view = session.scenario
        self._capabilities = CapabilityDocument(
            session_id=self.session_id,
            scenario_id=view.id,
            scenario_title=view.title,
            toolset=view.toolset,
            operations=derive_operations(view),
            view=view.model_dump(mode="json", exclude_none=True),
        )
        self._allowed = frozenset(
            _op_key(op) for op in self._capabilities.operations if op.action in RESOURCE_ACTIONS
        )
        self._lock = threading.Lock()
        self._log: list[LogEntry] = []
        self._keys: dict[str, str | None] = {}
        self._report: JSONObject | None = None
        self._closed = False
        self.facade_calls = 0

    # -- read-only views -------------------------------------------------------------------
    @property
    def scenario(self) -> ScenarioView:
        return self._session.scenario

    @property
    def log(self) -> tuple[LogEntry, ...]:
        """A snapshot of the log (appending to it is the session's alone)."""
        with self._lock:
            return tuple(self._log)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def reported(self) -> bool:
        return self._report is not None

    def capabilities(self) -> CapabilityDocument:
        """The advertisement (logged on every call, no facade call, no auth needed)."""
        with self._lock:
            self._append(LogKind.DISCOVERY, None, None, None, None, False)
        return self._capabilities

    def check_token(self, token: str | None) -> bool:
        """Constant-time comparison with the run token."""
        return token is not None and hmac.compare_digest(
            token.encode("utf-8", "surrogatepass"), self.run_token.encode()
        )

    # -- requests --------------------------------------------------------------------------
    def handle(self, raw: object, *, bearer: str | None = None) -> Reply:
        """Process one request body (already parsed from JSON). Never raises for bad input."""
        with self._lock:
            correlation = (
                raw.get("correlation_id")
                if isinstance(raw, dict) and isinstance(raw.get("correlation_id"), str)
                else None
            )
            if self._closed:
                return self._reject(
                    RejectReason.SESSION_CLOSED,
                    "the session is closed (the episode was finalised); no request is accepted",
                    correlation,
                )
            if not isinstance(raw, dict):
                return self._reject(
                    RejectReason.MALFORMED_ENVELOPE,
                    f"the body must be a JSON object, got {type(raw).__name__}",
                    correlation,
                )
            body = dict(raw)
            if "session_token" not in body and bearer is not None:
                body["session_token"] = bearer
            # The token is checked before the schema (the reference did it after, so a missing
            # token gave 400): an unauthenticated caller learns nothing about the envelope.
            token = body.get("session_token")
            if not isinstance(token, str) or not self.check_token(token):
                return self._reject(
                    RejectReason.AUTHENTICATION_FAILED,
                    "missing run token (send Authorization: Bearer <CAVBENCH_RUN_TOKEN>)"
                    if not token
                    else "the run token does not match this session",
                    correlation,
                    raw=body,
                )
            try:
                request = RequestEnvelope.model_validate(body)
            except ValidationError as exc:
                return self._reject(
                    RejectReason.MALFORMED_ENVELOPE, _error_text(exc), correlation, raw=body
                )
            try:
                action = Action(request.action)
            except ValueError:
                return self._reject(
                    RejectReason.UNKNOWN_OPERATION,
                    f"action {request.action!r} is not one of {[a.value for a in Action]}",
                    request.correlation_id,
                    raw=body,
                )
            if action is Action.REPORT:
                return self._accept_report(request)
            if action in RESOURCE_ACTIONS:
                tool = None if action is Action.READ else request.resource.tool_name or action
                key: OpKey = (
                    action,
                    tool,
                    request.resource.namespace,
                    request.resource.resource_id,
                )
                read_tool = request.resource.tool_name
                if key not in self._allowed or (
                    action is Action.READ
                    and read_tool is not None
                    and read_tool != READ_TOOLS.get(key[2], f"get_{key[2]}")
                ):
                    return self._reject(
                        RejectReason.CAPABILITY_VIOLATION,
                        f"{action.value} {tool or read_tool or ''} on "
                        f"{key[2]}:{key[3]} is not an advertised operation of this session "
                        "(see GET /capabilities)",
                        request.correlation_id,
                        raw=body,
                    )
            model = _PARAMETERS.get(action)
            try:
                params = model.model_validate(request.parameters) if model else None
            except ValidationError as exc:
                return self._reject(
                    RejectReason.MALFORMED_ENVELOPE,
                    f"parameters: {_error_text(exc)}",
                    request.correlation_id,
                    raw=body,
                )
            try:
                return self._dispatch(action, request, params)
            except CavBenchError as exc:
                # The world refused the call (e.g. a planned resource missing from the world):
                # the facade call happened and was recorded; the candidate sees a failure.
                return self._respond(request, action, OpStatus.FAILED, None, str(exc))

    def close(self) -> None:
        """Refuse every later request (idempotent)."""
        with self._lock:
            self._closed = True

    def result(self, *, default_name: str = "generic-protocol-candidate") -> AdapterResult:
        """The candidate's report as an untrusted `AdapterResult` (defaults when it sent none)."""
        with self._lock:
            report = dict(self._report or {})
        name = report.pop("adapter_name", default_name)
        version = report.pop("adapter_version", "0.0.0")
        final = report.pop("final_message", "")
        status = report.pop("completion_status", "success")
        metadata: JSONObject = {
            **report,
            "adapter_name": str(name),
            "adapter_version": str(version),
        }
        return AdapterResult(
            final_message=str(final), completion_status=str(status), metadata=metadata
        )

    # -- internals -------------------------------------------------------------------------
    def _append(
        self,
        kind: LogKind,
        action: str | None,
        correlation: str | None,
        operation: str | None,
        status: str | None,
        facade_call: bool,
        detail: str | None = None,
    ) -> None:
        self._log.append(
            LogEntry(
                len(self._log), kind, action, correlation, operation, status, facade_call, detail
            )
        )

    def _reject(
        self,
        reason: RejectReason,
        detail: str,
        correlation: str | None,
        *,
        raw: Mapping[str, object] | None = None,
    ) -> Rejection:
        action = raw.get("action") if raw is not None else None
        operation = raw.get("operation_id") if raw is not None else None
        self._append(
            LogKind.REJECTION,
            action if isinstance(action, str) else None,
            correlation,
            operation if isinstance(operation, str) else None,
            reason.value,
            False,
            detail,
        )
        return Rejection(correlation_id=correlation, reason=reason, detail=detail)

    def _accept_report(self, request: RequestEnvelope) -> Reply:
        self._report = dict(request.parameters)
        return self._respond(request, Action.REPORT, OpStatus.ACCEPTED, None, None, call=False)

    def _respond(
        self,
        request: RequestEnvelope,
        action: Action,
        status: OpStatus,
        data: dict[str, Any] | None,
        message: str | None,
        *,
        call: bool = True,
    ) -> ResponseEnvelope:
        self._append(
            LogKind.REQUEST,
            action.value,
            request.correlation_id,
            request.operation_id,
            status.value,
            call,
        )
        return ResponseEnvelope(
            correlation_id=request.correlation_id,
            operation_id=request.operation_id,
            status=status,
            data=data,
            message=message,
        )

    def _dispatch(self, action: Action, request: RequestEnvelope, params: _Params | None) -> Reply:
        tools = self._session.tools
        resource = request.resource
        match action:
            case Action.READ:
                self.facade_calls += 1
                result = tools.read(resource.namespace, resource.resource_id)
                return self._respond(request, action, OpStatus.OK, _as_data(result), None)
            case Action.WRITE | Action.COMPENSATE:
                assert isinstance(params, WriteParams)
                # Remembered before the call: a status check may follow any write, even a refused one.
                self._keys[request.operation_id] = request.idempotency_key
                self.facade_calls += 1
                result = tools.write(
                    step_id=params.step_id or request.operation_id,
                    tool_name=resource.tool_name or action.value,
                    namespace=resource.namespace,
                    resource_id=resource.resource_id,
                    changes=params.changes,
                    args=params.args,
                    logical_operation_id=request.operation_id,
                    idempotency_key=request.idempotency_key,
                    expected_version=request.expected_version,
                    compensation_for=params.compensation_for
                    if action is Action.COMPENSATE
                    else None,
                )
                status = _WRITE_STATUS.get(result.status, OpStatus.FAILED)
                # `rejected` merges a conflict and a replay (as the contract says); the message
                # names which, an extension a client may use or ignore.
                message = result.message or (
                    result.status.value.lower() if status is OpStatus.REJECTED else None
                )
                return self._respond(request, action, status, _as_data(result), message)
            case Action.STATUS_CHECK:
                key = request.idempotency_key or self._keys.get(request.operation_id)
                if not key:
                    return self._reject(
                        RejectReason.UNKNOWN_OPERATION_ID,
                        f"no idempotency key given and none was sent with a write of "
                        f"operation {request.operation_id!r}",
                        request.correlation_id,
                        raw=request.model_dump(),
                    )
                self.facade_calls += 1
                result = tools.status_check(key)
                found = result.status is ToolStatus.COMMITTED
                status = OpStatus.OK if found else OpStatus.NOT_FOUND
                return self._respond(request, action, status, _as_data(result), None)
            case Action.ESCALATE:
                escalate = params
                assert isinstance(escalate, EscalateParams)
                self.facade_calls += 1
                result = tools.escalate(escalate.reason, request.operation_id)
                return self._respond(request, action, OpStatus.CREATED, None, result.message)
            case Action.CLARIFY:
                clarify = params
                assert isinstance(clarify, ClarifyParams)
                self.facade_calls += 1
                result = tools.clarify(clarify.question)
                return self._respond(
                    request, action, OpStatus.CLARIFICATION_REQUESTED, None, result.message
                )
            case _:  # pragma: no cover - REPORT is handled before dispatch
                raise AssertionError(action)
