"""The benchmark environment: the only writer of side effects (SPEC b.4).

Every adapter action arrives here through the `ToolFacade` and is recorded as trace events
before anything else can observe it. Faults fire at named hooks. `finalize` freezes what
happened into an `EpisodeTrace`; nothing the adapter returns is written anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from cavbench.errors import CavBenchError, EpisodeClosed
from cavbench.runtime._faults import FaultScheduler
from cavbench.runtime._ledger import Ledger
from cavbench.runtime._state import StateStore, copy_json, copy_resource, version_of
from cavbench.runtime.session import AdapterSession, CommitOutcome, ToolFacade, ToolStatus
from cavbench.scenarios import FaultMode, Injection, Scenario, deep_copy, executed_digest
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
_AMBIGUOUS, _COMMITTED_STATUS = ToolStatus.AMBIGUOUS, ToolStatus.COMMITTED
_new = tuple.__new__
"""Named tuples built as `_new(Record, (fields...))`: skips the generated `__new__`'s frame."""
_NO_VERSIONS: Mapping[str, int | None] = MappingProxyType({})
_EMPTY: Mapping[str, JSON] = MappingProxyType({})


def _user_input(scenario: Scenario) -> TraceEvent:
    return TraceEvent(
        seq=0,
        event_type=EventType.USER_INPUT,
        source="scenario",
        metadata={"text": scenario.task.user_request},
    )


class _Template:
    """What every episode of one scenario starts from, derived once (kept on the pack's
    scenario object): the checked initial state, the fault schedule and the first event.
    Only for episodes that share the pack's originals (not isolated)."""

    __slots__ = ("_faults", "_state", "user_input")

    def __init__(self, scenario: Scenario) -> None:
        source = f"{scenario.id}: world.initial_state"
        self._state = StateStore(scenario.world.initial_state, source=source)
        self._faults = FaultScheduler(scenario.world.injections)
        self.user_input = _user_input(scenario)  # immutable: shared by every episode

    def store(self) -> StateStore:
        return self._state.fork()

    def faults(self) -> FaultScheduler:
        return self._faults.fork()


class Environment:
    """A fresh world for one (scenario, seed, run id). `seed` is recorded; the world has no
    randomness and reads no clock, so the same inputs give the same trace."""

    __slots__ = (
        "_closed",
        "_commit_keys",
        "_events",
        "_faults",
        "_forced_failures",
        "_initial",
        "_injections",
        "_isolated",
        "_ledger",
        "_state",
        "_view",
        "repetition",
        "run_id",
        "scenario_id",
        "seed",
    )

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        run_id: str = "",
        repetition: int = 0,
        isolate: bool = True,
    ) -> None:
        # Everything the adapter can reach from its session (the view, and through the
        # facade this object) is this episode's own copy; the pack's scenario is not kept
        # here, so no attribute path leads back to it (see `scenarios._isolation`).
        # `isolate=False` shares the pack's originals: only for code that never edits
        # them and never reaches past the facade (the baseline engine; see the runner).
        self.scenario_id = scenario.id
        self.seed = seed
        self.run_id = run_id
        self.repetition = repetition
        world = scenario.world
        self._isolated = isolate
        if isolate:
            self._view = deep_copy(scenario.view())
            self._initial = deep_copy(world.initial_state)
            self._injections: tuple[Injection, ...] = deep_copy(world.injections)
            self._state = StateStore(self._initial, source=f"{scenario.id}: world.initial_state")
            self._faults = FaultScheduler(self._injections)
            first = _user_input(scenario)
        else:
            # The pack's originals, checked and ordered once per scenario object.
            template = scenario.compiled("runtime.world", _Template)
            self._view, self._initial, self._injections = (
                scenario.view(),
                world.initial_state,
                world.injections,
            )
            self._state = template.store()
            self._faults = template.faults()
            first = template.user_input
        self._closed = False
        self._ledger = Ledger()
        self._events: list[TraceEvent] = [first]
        self._forced_failures: dict[str, str] = {}
        self._commit_keys: dict[str, str] = {}

    # -- the adapter's side -------------------------------------------------------------
    def session(self) -> AdapterSession:
        """The adapter's session: this episode's copy of the view and a facade over this
        environment."""
        return AdapterSession(
            self._view,
            ToolFacade(self, checked=self._isolated),
            seed=self.seed,
            repetition=self.repetition,
        )

    def close(self) -> None:
        """End the adapter's access: every later facade call raises `EpisodeClosed` (a
        runaway adapter past its time limit, or one that kept its session)."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise EpisodeClosed(
                f"{self.scenario_id}: the episode is over (time limit reached or already "
                "finalized); the world refuses further calls"
            )

    def executed_digest(self, scenario: Scenario) -> str:
        """The digest of the scenario as this episode ran it: `scenario.digest` when the
        episode's copies still equal the pack's originals, else the copies' own digest.
        The caller passes the pack's scenario (this object never holds it)."""
        if self._view is scenario.view():  # not isolated: nothing untrusted held them
            return scenario.digest
        if (
            self._view == scenario.view()
            and self._initial == scenario.world.initial_state
            and self._injections == scenario.world.injections
        ):
            return scenario.digest
        return executed_digest(self._view, self._initial, self._injections)

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
                    f"{self.scenario_id}: injection {injection.fault_id!r}: external_mutation needs "
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
                metadata={"changes": copy_json(changes) if self._isolated else changes},
            )
        elif injection.mode in (FaultMode.DOWNSTREAM_FAILURE, FaultMode.COMPENSATION_FAILURE):
            # CAV-Bench: a falsy affects_step ("", 0) falls back to the hook's step; any
            # other non-string (a number) targets no step, but the fault is still recorded.
            target = payload.get("affects_step")
            step = target if target else injection.hook.partition(":")[2]
            if isinstance(step, str):
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
        if self._closed:
            self._check_open()
        stored = self._state.peek(namespace, resource_id)
        ref = f"{namespace}:{resource_id}"
        events = self._events
        events.append(  # positional: this is the hot path of every episode
            _new(
                TraceEvent,
                (
                    len(events),
                    _TOOL_READ,
                    "environment",
                    tool_name,
                    {"resource_id": resource_id},
                    (ref,),
                    {ref: version_of(stored)},
                    _NO_VERSIONS,
                    None,
                    None,
                    _OK,
                    None,
                    {"result": stored},
                ),
            )
        )
        if self._faults.pending:
            self._fire(f"after_read:{ref}")
        if not self._isolated:
            return stored  # the baseline engine never edits what it reads (see `__init__`)
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
        if self._closed:
            self._check_open()
        ref = f"{namespace}:{resource_id}"
        refs = (ref,)
        if self._isolated:  # the adapter keeps its own dict; the record must not change
            args = copy_resource(args)
        events = self._events
        faults = self._faults
        state = self._state
        # The two events of every write are built inline and positionally (hot path); the
        # rejections, rarer, through `rejected`.
        version = state.version(namespace, resource_id)
        events.append(
            _new(
                TraceEvent,
                (
                    len(events),
                    _ATTEMPT,
                    "environment",
                    tool_name,
                    args,
                    refs,
                    {ref: version},
                    _NO_VERSIONS,
                    logical_operation_id,
                    idempotency_key,
                    None,
                    None,
                    _EMPTY,
                ),
            )
        )

        def rejected(status: str, metadata: Mapping[str, JSON] = _EMPTY) -> None:
            self._record(
                _REJECTED,
                tool_name=tool_name,
                args=args,
                resource_refs=refs,
                logical_operation_id=logical_operation_id,
                idempotency_key=idempotency_key,
                response_status=status,
                metadata=metadata,
            )

        if faults.pending:
            fired = self._fire(f"before_commit_step:{step_id}")
            if self._fire(f"before_commit:{tool_name}:{ref}") or fired:
                version = state.version(namespace, resource_id)  # a fault may have changed it

        forced = self._forced_failures.pop(step_id, None) if self._forced_failures else None
        if forced is not None:
            rejected(_FAILED, {"reason": forced})
            return CommitOutcome(ToolStatus.FAILED, None)

        actual = version
        if expected_version is not None and expected_version != actual:
            rejected(_CONFLICT, {"expected_version": expected_version, "actual_version": actual})
            return CommitOutcome(ToolStatus.CONFLICT, state.get(namespace, resource_id))

        if idempotency_key and idempotency_key in self._commit_keys:
            rejected(_REPLAY)
            return CommitOutcome(ToolStatus.IDEMPOTENT_REPLAY, state.get(namespace, resource_id))

        mutation = state.mutate(namespace, resource_id, changes)
        ledger = self._ledger
        row, _ = ledger.append(
            ledger.build(
                len(events),
                effect_type,
                logical_operation_id,
                idempotency_key,
                ref,
                args,
                compensation_for,
            )
        )
        effect_id = row.effect_id
        if idempotency_key:
            self._commit_keys[idempotency_key] = effect_id
        after = mutation.after
        events.append(
            _new(
                TraceEvent,
                (
                    len(events),
                    _COMMIT,
                    "environment",
                    tool_name,
                    args,
                    refs,
                    {ref: actual},
                    {ref: version_of(after)},
                    logical_operation_id,
                    idempotency_key,
                    _COMMITTED,
                    None,
                    {"effect_id": effect_id, "effect_type": effect_type},
                ),
            )
        )
        ambiguous = False
        if faults.pending:
            self._fire(f"after_commit_step:{step_id}")
            self._fire(f"after_commit:{tool_name}:{ref}")
            ambiguous = self._fire(f"after_commit_before_response:{tool_name}:{ref}")
        status = _AMBIGUOUS if ambiguous else _COMMITTED_STATUS
        return _new(CommitOutcome, (status, copy_resource(after) if self._isolated else after))

    def status_check(self, idempotency_key: str) -> bool:
        self._check_open()
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
        self._check_open()
        ref = f"case:{self.scenario_id}"
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
        self._check_open()
        self._record(EventType.CLARIFICATION, tool_name="clarify", metadata={"question": question})

    def refuse(self, call: str, reason: str) -> None:
        """Record a facade call refused before it reached the world (arguments the tables
        cannot hold): the episode keeps it even if the adapter handles the error."""
        self._check_open()
        self._record(
            _REJECTED,
            tool_name=call,
            response_status="INVALID",
            metadata={"reason": reason},
        )

    def run_error(
        self, message: str, traceback_text: str = "", status: str = "adapter_error"
    ) -> None:
        """Record that the adapter raised or ran out of time (`status`, an `EpisodeStatus`
        value); the harness (not the adapter) calls this."""
        self._record(
            EventType.RUN_ERROR,
            source="harness",
            response_status="ERROR",
            metadata={"message": message, "traceback": traceback_text, "status": status},
        )

    # -- end of episode -----------------------------------------------------------------
    def snapshot(self) -> State:
        return self._state.snapshot()

    @property
    def events(self) -> tuple[TraceEvent, ...]:
        return tuple(self._events)

    def finalize(
        self,
        report: AdapterReport,
        agent: AgentTranscript | None = None,
        scenario_digest: str = "",
    ) -> EpisodeTrace:
        """Freeze the episode. The adapter's report is stored as given; nothing scores it
        except the evaluator's overclaim check on `completion_status`. (The runner also
        `close`s the world; the audit keeps acting on a finalized one.)"""
        return EpisodeTrace(  # positional (the field order): once per episode
            self.scenario_id,
            self.run_id,
            self.seed,
            tuple(self._events),
            self._state.shared(),
            self._ledger.rows,
            report,
            agent,
            scenario_digest,
        )
