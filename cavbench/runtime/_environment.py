"""The benchmark environment: the only writer of side effects (SPEC b.4).

Every adapter action arrives here through the `ToolFacade` and is recorded as trace events
before anything else can observe it. Faults fire at named hooks. `finalize` freezes what
happened into an `EpisodeTrace`; nothing the adapter returns is written anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from cavbench.errors import CavBenchError
from cavbench.runtime._faults import FaultScheduler
from cavbench.runtime._ledger import Ledger
from cavbench.runtime._state import StateStore, copy_json, copy_resource, version_of
from cavbench.runtime.session import AdapterSession, CommitOutcome, ToolFacade, ToolStatus
from cavbench.scenarios import FaultMode, Injection, Scenario
from cavbench.trace import (
    JSON,
    AdapterReport,
    AgentTranscript,
    EpisodeTrace,
    EventType,
    JSONObject,
    Resource,
    State,
    TraceEvent,
)

# Enum attribute access is slow on the hot path; bind the members used per event once.
_TOOL_READ = EventType.TOOL_READ
_ATTEMPT = EventType.TOOL_CALL_ATTEMPT
_REJECTED = EventType.COMMIT_REJECTED
_COMMIT = EventType.SIDE_EFFECT_COMMIT
_OK = ToolStatus.OK.value
_FAILED = ToolStatus.FAILED.value
_CONFLICT = ToolStatus.CONFLICT.value
_REPLAY = ToolStatus.IDEMPOTENT_REPLAY.value
_COMMITTED = ToolStatus.COMMITTED.value
_NO_VERSIONS: Mapping[str, int | None] = MappingProxyType({})
_EMPTY: Mapping[str, JSON] = MappingProxyType({})


class Environment:
    """A fresh world for one (scenario, seed, run id). `seed` is recorded; the world has no
    randomness and reads no clock, so the same inputs give the same trace."""

    __slots__ = (
        "_commit_keys",
        "_events",
        "_faults",
        "_forced_failures",
        "_ledger",
        "_state",
        "repetition",
        "run_id",
        "scenario",
        "seed",
    )

    def __init__(
        self, scenario: Scenario, *, seed: int = 0, run_id: str = "", repetition: int = 0
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.repetition = repetition
        self.run_id = run_id
        self._state = StateStore(
            scenario.world.initial_state, source=f"{scenario.id}: world.initial_state"
        )
        self._ledger = Ledger()
        self._faults = FaultScheduler(scenario.world.injections)
        self._events: list[TraceEvent] = []
        self._forced_failures: dict[str, str] = {}
        self._commit_keys: dict[str, str] = {}
        self._events.append(
            TraceEvent(
                seq=0,
                event_type=EventType.USER_INPUT,
                source="scenario",
                metadata={"text": scenario.task.user_request},
            )
        )

    # -- the adapter's side -------------------------------------------------------------
    @property
    def scenario_id(self) -> str:
        return self.scenario.id

    def session(self) -> AdapterSession:
        """The adapter's session: the scenario view and a facade over this environment."""
        return AdapterSession(
            self.scenario.view(), ToolFacade(self), seed=self.seed, repetition=self.repetition
        )

    # -- recording --------------------------------------------------------------------------
    @property
    def _next_seq(self) -> int:
        return len(self._events)

    def _record(self, event_type: EventType, **fields: object) -> TraceEvent:
        event = TraceEvent(seq=len(self._events), event_type=event_type, **fields)  # type: ignore[arg-type]
        self._events.append(event)
        return event

    # -- faults -------------------------------------------------------------------------
    def _fire(self, hook: str) -> bool:
        fired = self._faults.fire(hook)
        for injection in fired:
            self._apply_fault(injection)
        return bool(fired)

    def _apply_fault(self, injection: Injection) -> None:
        payload = injection.payload
        if injection.mode is FaultMode.EXTERNAL_MUTATION:
            namespace = payload.get("namespace")
            resource_id = payload.get("resource_id")
            changes = payload.get("changes")
            if (
                not isinstance(namespace, str)
                or resource_id is None
                or not isinstance(changes, dict)
            ):
                raise CavBenchError(
                    f"{self.scenario.id}: injection {injection.fault_id!r}: external_mutation needs "
                    "payload.namespace, payload.resource_id and payload.changes (an object)"
                )
            ref = f"{namespace}:{resource_id}"
            mutation = self._state.mutate(namespace, str(resource_id), changes)
            self._record(
                EventType.EXTERNAL_MUTATION,
                resource_refs=(ref,),
                versions_before={ref: version_of(mutation.before)},
                versions_after={ref: version_of(mutation.after)},
                fault_id=injection.fault_id,
                response_status="external_mutation",
                metadata={"changes": copy_json(changes)},
            )
        elif injection.mode in (FaultMode.DOWNSTREAM_FAILURE, FaultMode.COMPENSATION_FAILURE):
            target = payload.get("affects_step")
            step = target if isinstance(target, str) else injection.hook.partition(":")[2]
            self._forced_failures[step] = injection.mode.value
            self._record(
                EventType.FAULT,
                fault_id=injection.fault_id,
                response_status=injection.mode.value,
                metadata={"affects_step": step},
            )
        else:  # ambiguous_response: its effect is the AMBIGUOUS response at its hook
            self._record(
                EventType.FAULT, fault_id=injection.fault_id, response_status=injection.mode.value
            )

    # -- WorldPort ----------------------------------------------------------------------
    def read(self, namespace: str, resource_id: str, tool_name: str) -> Resource:
        stored = self._state.peek(namespace, resource_id)
        ref = f"{namespace}:{resource_id}"
        self._record(
            _TOOL_READ,
            tool_name=tool_name,
            args={"resource_id": resource_id},
            resource_refs=(ref,),
            versions_before={ref: version_of(stored)},
            response_status=_OK,
            metadata={"result": stored},
        )
        if self._faults.pending:
            self._fire(f"after_read:{ref}")
        return copy_resource(stored)  # the adapter's own copy: its edits reach nothing

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
        ref = f"{namespace}:{resource_id}"
        refs = (ref,)
        args = copy_resource(args)  # the adapter keeps its own dict; the record must not change
        events = self._events
        faults = self._faults

        def event(
            kind: EventType,
            status: str | None,
            before: Mapping[str, int | None] = _NO_VERSIONS,
            after: Mapping[str, int | None] = _NO_VERSIONS,
            metadata: Mapping[str, JSON] = _EMPTY,
        ) -> None:
            # Positional construction: this is the hot path of every episode.
            events.append(
                TraceEvent(
                    len(events),
                    kind,
                    "environment",
                    tool_name,
                    args,
                    refs,
                    before,
                    after,
                    logical_operation_id,
                    idempotency_key,
                    status,
                    None,
                    metadata,
                )
            )

        event(_ATTEMPT, None, {ref: self._state.version(namespace, resource_id)})
        if faults.pending:
            self._fire(f"before_commit_step:{step_id}")
            self._fire(f"before_commit:{tool_name}:{ref}")

        forced = self._forced_failures.pop(step_id, None) if self._forced_failures else None
        if forced is not None:
            event(_REJECTED, _FAILED, metadata={"reason": forced})
            return CommitOutcome(ToolStatus.FAILED, None)

        actual = self._state.version(namespace, resource_id)
        if expected_version is not None and expected_version != actual:
            event(
                _REJECTED,
                _CONFLICT,
                metadata={"expected_version": expected_version, "actual_version": actual},
            )
            return CommitOutcome(ToolStatus.CONFLICT, self._state.get(namespace, resource_id))

        if idempotency_key and idempotency_key in self._commit_keys:
            event(_REJECTED, _REPLAY)
            return CommitOutcome(
                ToolStatus.IDEMPOTENT_REPLAY, self._state.get(namespace, resource_id)
            )

        mutation = self._state.mutate(namespace, resource_id, changes)
        row = self._ledger.build(
            seq=len(events),
            effect_type=effect_type,
            logical_operation_id=logical_operation_id,
            idempotency_key=idempotency_key,
            resource_ref=ref,
            payload=args,
            compensation_for=compensation_for,
        )
        row, _ = self._ledger.append(row)
        if idempotency_key:
            self._commit_keys[idempotency_key] = row.effect_id
        event(
            _COMMIT,
            _COMMITTED,
            {ref: actual},
            {ref: version_of(mutation.after)},
            {"effect_id": row.effect_id, "effect_type": effect_type},
        )
        ambiguous = False
        if faults.pending:
            self._fire(f"after_commit_step:{step_id}")
            self._fire(f"after_commit:{tool_name}:{ref}")
            ambiguous = self._fire(f"after_commit_before_response:{tool_name}:{ref}")
        status = ToolStatus.AMBIGUOUS if ambiguous else ToolStatus.COMMITTED
        return CommitOutcome(status, copy_resource(mutation.after))

    def status_check(self, idempotency_key: str) -> bool:
        effect_id = self._commit_keys.get(idempotency_key) if idempotency_key else None
        self._record(
            EventType.OPERATION_STATUS_READ,
            tool_name="get_operation_status",
            args={"idempotency_key": idempotency_key},
            idempotency_key=idempotency_key,
            response_status=(ToolStatus.COMMITTED if effect_id else ToolStatus.NOT_FOUND).value,
            metadata={"effect_id": effect_id} if effect_id else {},
        )
        return effect_id is not None

    def escalate(self, reason: str, logical_operation_id: str) -> None:
        ref = f"case:{self.scenario.id}"
        row = self._ledger.build(
            seq=self._next_seq,
            effect_type="escalate_case",
            logical_operation_id=logical_operation_id,
            idempotency_key=logical_operation_id,
            resource_ref=ref,
            payload={"reason": reason},
        )
        self._ledger.append(row)
        self._record(
            EventType.ESCALATION,
            tool_name="escalate_case",
            args={"reason": reason},
            resource_refs=(ref,),
            logical_operation_id=logical_operation_id,
            response_status=ToolStatus.CREATED.value,
            metadata={"effect_id": row.effect_id},
        )

    def clarify(self, question: str) -> None:
        self._record(EventType.CLARIFICATION, tool_name="clarify", metadata={"question": question})

    def run_error(self, message: str, traceback_text: str = "") -> None:
        """Record that the adapter raised; the harness (not the adapter) calls this."""
        self._record(
            EventType.RUN_ERROR,
            source="harness",
            response_status="ERROR",
            metadata={"message": message, "traceback": traceback_text},
        )

    # -- end of episode -----------------------------------------------------------------
    def snapshot(self) -> State:
        return self._state.snapshot()

    @property
    def events(self) -> tuple[TraceEvent, ...]:
        return tuple(self._events)

    def finalize(self, report: AdapterReport, agent: AgentTranscript | None = None) -> EpisodeTrace:
        """Freeze the episode. The adapter's report is stored as given; nothing scores it
        except the evaluator's overclaim check on `completion_status`."""
        return EpisodeTrace(
            scenario_id=self.scenario.id,
            run_id=self.run_id,
            seed=self.seed,
            events=tuple(self._events),
            final_state=self._state.snapshot(),
            side_effects=self._ledger.rows,
            adapter_report=report,
            agent=agent,
        )
