"""What an episode leaves behind: trace events, ledger rows, final state, adapter report.

These records are written only by the runtime and read by the evaluator, the tables and
replay. They are frozen; the nested JSON payloads are plain dicts that nobody mutates after
the record is built (the runtime hands out copies).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

from cavbench.trace._agent import AgentTranscript, StopReason
from cavbench.trace._fast import fast_init

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None
JSONObject: TypeAlias = dict[str, JSON]
Resource: TypeAlias = dict[str, JSON]
State: TypeAlias = dict[str, dict[str, Resource]]
"""World state: namespace -> resource id -> fields (with an integer `version` when versioned)."""

TRACE_SCHEMA_VERSION = "1.0"


class EventType(StrEnum):
    """Trace event vocabulary (SPEC b.6)."""

    USER_INPUT = "user_input"
    TOOL_READ = "tool_read"
    EXTERNAL_MUTATION = "external_mutation"
    TOOL_CALL_ATTEMPT = "tool_call_attempt"
    COMMIT_REJECTED = "commit_rejected"
    SIDE_EFFECT_COMMIT = "side_effect_commit"
    OPERATION_STATUS_READ = "operation_status_read"
    RETRY = "retry"
    COMPENSATION_ATTEMPT = "compensation_attempt"
    COMPENSATION_RESULT = "compensation_result"
    CLARIFICATION = "clarification"
    ESCALATION = "escalation"
    AGENT_MESSAGE = "agent_message"
    FAULT = "fault"
    RUN_ERROR = "run_error"


class EpisodeStatus(StrEnum):
    """How an episode ended, as the harness saw it (the `status` column of `episodes`).

    `adapter_error` and `timeout` are the agent's failures and count in rates like any failed
    episode; `infra_error` (a model or gateway outage, not the agent's doing) is excluded."""

    COMPLETED = "completed"
    ADAPTER_ERROR = "adapter_error"
    TIMEOUT = "timeout"
    INFRA_ERROR = "infra_error"


class CompletionStatus(StrEnum):
    """What an adapter may claim about its own run. Ordered by severity."""

    SUCCESS = "success"
    PARTIAL = "partial"
    PENDING_RECOVERY = "pending_recovery"
    FAILED = "failed"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {
    CompletionStatus.SUCCESS: 0,
    CompletionStatus.PARTIAL: 1,
    CompletionStatus.PENDING_RECOVERY: 2,
    CompletionStatus.FAILED: 3,
}


def severity_of(status: str) -> int:
    """Severity of a reported status; unknown strings count as 0 (SPEC d.1 step 8)."""
    try:
        return CompletionStatus(status).severity
    except ValueError:
        return 0


_NO_VERSIONS: Mapping[str, int | None] = MappingProxyType({})
_EMPTY: Mapping[str, JSON] = MappingProxyType({})


class TraceEvent(NamedTuple):
    """One environment-recorded event. `logical_time` equals `seq`.

    An immutable named tuple rather than a frozen dataclass: the runtime builds several per
    episode and tuple construction is about three times cheaper.
    """

    seq: int
    event_type: EventType
    source: str = "environment"
    tool_name: str | None = None
    args: Mapping[str, JSON] = _EMPTY
    resource_refs: tuple[str, ...] = ()
    versions_before: Mapping[str, int | None] = _NO_VERSIONS
    versions_after: Mapping[str, int | None] = _NO_VERSIONS
    logical_operation_id: str | None = None
    idempotency_key: str | None = None
    response_status: str | None = None
    fault_id: str | None = None
    metadata: Mapping[str, JSON] = _EMPTY

    @property
    def logical_time(self) -> int:
        return self.seq

    def as_json(self) -> JSONObject:
        """The event in CAV-Bench's trace-v1 form."""
        return {
            "seq": self.seq,
            "logical_time": self.seq,
            "event_type": self.event_type.value,
            "source": self.source,
            "tool_name": self.tool_name,
            "args": dict(self.args),
            "resource_refs": list(self.resource_refs),
            "versions_before": dict(self.versions_before),
            "versions_after": dict(self.versions_after),
            "logical_operation_id": self.logical_operation_id,
            "idempotency_key": self.idempotency_key,
            "response_status": self.response_status,
            "fault_id": self.fault_id,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceEvent:
        return cls(
            seq=int(data["seq"]),
            event_type=EventType(data["event_type"]),
            source=str(data.get("source") or "environment"),
            tool_name=data.get("tool_name"),
            args=dict(data.get("args") or {}),
            resource_refs=tuple(data.get("resource_refs") or ()),
            versions_before=dict(data.get("versions_before") or {}),
            versions_after=dict(data.get("versions_after") or {}),
            logical_operation_id=data.get("logical_operation_id"),
            idempotency_key=data.get("idempotency_key"),
            response_status=data.get("response_status"),
            fault_id=data.get("fault_id"),
            metadata=dict(data.get("metadata") or {}),
        )


class LedgerRow(NamedTuple):
    """One committed side effect (SPEC b.3). The ledger only ever appends these."""

    effect_id: str
    seq: int
    effect_type: str
    logical_operation_id: str
    idempotency_key: str | None
    resource_ref: str
    payload: Mapping[str, JSON]
    compensation_for: str | None = None

    def as_json(self) -> JSONObject:
        return {
            "effect_id": self.effect_id,
            "seq": self.seq,
            "effect_type": self.effect_type,
            "logical_operation_id": self.logical_operation_id,
            "idempotency_key": self.idempotency_key,
            "resource_ref": self.resource_ref,
            "payload": dict(self.payload),
            "compensation_for": self.compensation_for,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LedgerRow:
        return cls(
            effect_id=str(data["effect_id"]),
            seq=int(data["seq"]),
            effect_type=str(data["effect_type"]),
            logical_operation_id=str(data["logical_operation_id"]),
            idempotency_key=data.get("idempotency_key"),
            resource_ref=str(data["resource_ref"]),
            payload=dict(data.get("payload") or {}),
            compensation_for=data.get("compensation_for"),
        )


@fast_init
@dataclass(frozen=True, slots=True)
class AdapterReport:
    """What the adapter said about its own run. Untrusted: the evaluator reads only
    `completion_status`, and only to catch an overclaim."""

    adapter_name: str = "unknown"
    adapter_version: str = "0.0.0"
    final_message: str = ""
    completion_status: str = CompletionStatus.SUCCESS.value
    metadata: JSONObject = field(default_factory=dict)

    def as_json(self) -> JSONObject:
        # Name/version/status are written after metadata so metadata cannot shadow them
        # (the reference spread metadata last; see SPEC e.1).
        return {
            **self.metadata,
            "adapter_name": self.adapter_name,
            "adapter_version": self.adapter_version,
            "final_message": self.final_message,
            "completion_status": self.completion_status,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AdapterReport:
        known = {"adapter_name", "adapter_version", "final_message", "completion_status"}
        return cls(
            adapter_name=str(data.get("adapter_name", "unknown")),
            adapter_version=str(data.get("adapter_version", "0.0.0")),
            final_message=str(data.get("final_message", "")),
            completion_status=str(data.get("completion_status", CompletionStatus.SUCCESS.value)),
            metadata={k: v for k, v in data.items() if k not in known},
        )


@fast_init
@dataclass(frozen=True, slots=True)
class EpisodeTrace:
    """Everything the environment recorded about one episode. Input to every scoring rule."""

    scenario_id: str
    run_id: str
    seed: int
    events: tuple[TraceEvent, ...]
    final_state: State
    side_effects: tuple[LedgerRow, ...]
    adapter_report: AdapterReport
    agent: AgentTranscript | None = None
    """Model calls and transcript of a model-driven adapter (not part of `as_json`)."""
    scenario_digest: str = ""
    """Digest of the scenario as this episode ran it (`Scenario.digest` unless something
    altered the episode's copy); empty for traces recorded before it existed."""

    @property
    def error(self) -> str | None:
        """The traceback if the adapter raised (recorded in the `run_error` event), else None."""
        for event in reversed(self.events):
            if event.event_type is EventType.RUN_ERROR:
                text = event.metadata.get("traceback") or event.metadata.get("message")
                return str(text) if text else "adapter raised"
        return None

    @property
    def status(self) -> EpisodeStatus:
        """How the episode ended, as the harness sees it (not what the adapter claimed):
        `infra_error` from a model-driven adapter's stop reason, else the `metadata.status`
        of the harness's `run_error` event (`timeout`, `adapter_error`), else `completed`."""
        if self.agent is not None and self.agent.stop_reason is StopReason.INFRA_ERROR:
            return EpisodeStatus.INFRA_ERROR
        for event in reversed(self.events):
            if event.event_type is EventType.RUN_ERROR:
                try:
                    return EpisodeStatus(str(event.metadata.get("status", "adapter_error")))
                except ValueError:
                    return EpisodeStatus.ADAPTER_ERROR
        if self.agent is not None and self.agent.stop_reason is StopReason.MODEL_ERROR:
            return EpisodeStatus.ADAPTER_ERROR
        return EpisodeStatus.COMPLETED

    def as_json(self) -> JSONObject:
        out: JSONObject = {
            "schema_version": TRACE_SCHEMA_VERSION,
            "scenario_id": self.scenario_id,
            "run_id": self.run_id,
            "seed": self.seed,
            "adapter_name": self.adapter_report.adapter_name,
            "adapter_version": self.adapter_report.adapter_version,
            "events": [e.as_json() for e in self.events],
            "final_state": self.final_state,  # type: ignore[dict-item]
            "side_effects": [r.as_json() for r in self.side_effects],
            "adapter_report": self.adapter_report.as_json(),
        }
        return out  # no scenario_digest: trace-v1 allows no extra keys (it is an episodes column)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EpisodeTrace:
        return cls(
            scenario_id=str(data["scenario_id"]),
            run_id=str(data.get("run_id", "")),
            seed=int(data.get("seed", 0)),
            events=tuple(TraceEvent.from_json(e) for e in data["events"]),
            final_state=data["final_state"],
            side_effects=tuple(LedgerRow.from_json(r) for r in data["side_effects"]),
            adapter_report=AdapterReport.from_json(data.get("adapter_report") or {}),
            scenario_digest=str(data.get("scenario_digest") or ""),
        )
