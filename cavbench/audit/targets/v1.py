"""Target (a): cavbench's own ``v1`` evaluator over a scenario pack.

- ``reset(scenario)`` builds a fresh :class:`~cavbench.runtime.Environment`;
- ``apply(action)`` is one tool-facade call (``read``, ``write``, ``status_check``,
  ``escalate``, ``clarify``) or ``report``, the adapter's closing claim about its run;
- ``score()`` is ``evaluate(scenario, trace_so_far, rule)``;
- ``read_state()`` digests the final state and the ledger (the world) and the recorded trace
  events plus the action log (the log).

The reference trajectory of a scenario is the facade calls the ``full_lifecycle`` baseline
makes, recorded call by call through a recording facade (the trace alone does not hold the
``changes`` of a write or its expected version), followed by its ``report``; a caller may
declare other references per scenario instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Final

from cavbench.adapters import ExecutionAdapter, Profile, baseline
from cavbench.audit._kit import OracleEnv, Representation, World, kit_factory, represent
from cavbench.audit._protocol import (
    JSON,
    Action,
    ActionKind,
    AuditError,
    Component,
    JSONObject,
    ScoreResult,
    StateDigest,
    digest_of,
)
from cavbench.audit._spec import TargetSpec
from cavbench.evaluation import DimensionStatus, ScoringRule, Verdict, evaluate
from cavbench.runtime import AdapterSession, Environment, ToolFacade, ToolResult, ToolStatus
from cavbench.scenarios import Scenario, ScenarioPack, load_pack
from cavbench.trace import AdapterReport, CompletionStatus, EpisodeTrace

OUTCOME_COMPONENT: Final = "outcome"
COMMITS_COMPONENT: Final = "no_invalid_commits"
AUDIT_ADAPTER: Final = "audit-target"
CLOSING_ACTION: Final = Action("end_session", {}, ActionKind.CLOSE)


class V1Tool(StrEnum):
    """Action names of the v1 target: the facade's operations plus the closing report."""

    READ = "read"
    WRITE = "write"
    STATUS_CHECK = "status_check"
    ESCALATE = "escalate"
    CLARIFY = "clarify"
    REPORT = "report"


def _str(value: JSON, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _opt_str(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _opt_int(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _object(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def call_facade(facade: ToolFacade, action: Action) -> ToolResult | None:
    """Perform ``action`` on ``facade``; None for ``report`` and unknown names."""
    a = action.args
    match action.name:
        case V1Tool.READ:
            return facade.read(
                _str(a.get("namespace")), _str(a.get("resource_id")), _opt_str(a.get("tool_name"))
            )
        case V1Tool.WRITE:
            return facade.write(
                step_id=_str(a.get("step_id")),
                tool_name=_str(a.get("tool_name")),
                namespace=_str(a.get("namespace")),
                resource_id=_str(a.get("resource_id")),
                changes=_object(a.get("changes")),
                logical_operation_id=_str(a.get("logical_operation_id")),
                idempotency_key=_opt_str(a.get("idempotency_key")),
                args=_object(a.get("args")),
                expected_version=_opt_int(a.get("expected_version")),
                compensation_for=_opt_str(a.get("compensation_for")),
            )
        case V1Tool.STATUS_CHECK:
            return facade.status_check(_str(a.get("idempotency_key")))
        case V1Tool.ESCALATE:
            return facade.escalate(_str(a.get("reason")), _str(a.get("logical_operation_id")))
        case V1Tool.CLARIFY:
            return facade.clarify(_str(a.get("question")))
        case _:
            return None


class _RecordingFacade(ToolFacade):
    """A facade that writes down every call as an :class:`Action` before making it."""

    def __init__(self, env: Environment, calls: list[Action]) -> None:
        super().__init__(env)
        self._calls = calls

    def read(self, namespace: str, resource_id: str, tool_name: str | None = None) -> ToolResult:
        args: JSONObject = {"namespace": namespace, "resource_id": str(resource_id)}
        if tool_name is not None:
            args["tool_name"] = tool_name
        self._calls.append(Action(V1Tool.READ, args))
        return super().read(namespace, resource_id, tool_name)

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
        self._calls.append(
            Action(
                V1Tool.WRITE,
                {
                    "step_id": step_id,
                    "tool_name": tool_name,
                    "namespace": namespace,
                    "resource_id": str(resource_id),
                    "changes": dict(changes),
                    "logical_operation_id": logical_operation_id,
                    "idempotency_key": idempotency_key,
                    "args": dict(args or {}),
                    "expected_version": expected_version,
                    "compensation_for": compensation_for,
                },
            )
        )
        return super().write(
            step_id=step_id,
            tool_name=tool_name,
            namespace=namespace,
            resource_id=resource_id,
            changes=changes,
            logical_operation_id=logical_operation_id,
            idempotency_key=idempotency_key,
            args=args,
            expected_version=expected_version,
            compensation_for=compensation_for,
        )

    def status_check(self, idempotency_key: str) -> ToolResult:
        self._calls.append(Action(V1Tool.STATUS_CHECK, {"idempotency_key": idempotency_key}))
        return super().status_check(idempotency_key)

    def escalate(self, reason: str, logical_operation_id: str) -> ToolResult:
        self._calls.append(
            Action(
                V1Tool.ESCALATE, {"reason": reason, "logical_operation_id": logical_operation_id}
            )
        )
        return super().escalate(reason, logical_operation_id)

    def clarify(self, question: str) -> ToolResult:
        self._calls.append(Action(V1Tool.CLARIFY, {"question": question}))
        return super().clarify(question)


def record_reference(scenario: Scenario, adapter: ExecutionAdapter) -> tuple[Action, ...]:
    """Run ``adapter`` on ``scenario`` and return its facade calls plus its ``report``."""
    env = Environment(scenario)
    calls: list[Action] = []
    result = adapter.run(AdapterSession(scenario.view(), _RecordingFacade(env, calls)))
    status = result.completion_status
    calls.append(
        Action(
            V1Tool.REPORT,
            {
                "completion_status": str(getattr(status, "value", status)),
                "final_message": str(result.final_message),
            },
        )
    )
    return tuple(calls)


_COMMITTED: Final = frozenset({ToolStatus.COMMITTED, ToolStatus.AMBIGUOUS})


class _Missing:
    """Marks a path that does not resolve."""


_MISSING: Final = _Missing()


def _at(data: Mapping[str, object], path: Sequence[str]) -> object:
    node: object = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _default_report() -> AdapterReport:
    return AdapterReport(adapter_name=AUDIT_ADAPTER, completion_status=CompletionStatus.SUCCESS)


class V1World(World):
    """A live cavbench environment plus the adapter's report so far.

    Copies are rebuilt by replaying the calls made so far on a fresh environment (the
    environment is deterministic), so checkpoint/restore needs nothing from the runtime.
    """

    def __init__(self, scenario: Scenario) -> None:
        super().__init__()
        self._scenario = scenario
        self._env = Environment(scenario)
        self._facade = ToolFacade(self._env)
        self._calls: list[Action] = []
        self._report = _default_report()
        self._trace: EpisodeTrace | None = None
        self._written: set[tuple[str, str, str]] = set()
        self._escalated: set[str] = set()

    def apply_effect(self, action: Action) -> None:
        self._trace = None
        self._calls.append(action)
        if action.name == V1Tool.REPORT:
            self._report = AdapterReport(
                adapter_name=AUDIT_ADAPTER,
                final_message=_str(action.args.get("final_message")),
                completion_status=_str(action.args.get("completion_status"), "success"),
            )
            return
        result = call_facade(self._facade, action)
        if result is None:
            return
        if action.name == V1Tool.WRITE and result.status in _COMMITTED:
            ns, rid = _str(action.args.get("namespace")), _str(action.args.get("resource_id"))
            self._written |= {(ns, rid, path) for path in _object(action.args.get("changes"))}
        elif action.name == V1Tool.ESCALATE:
            self._escalated.add(_str(action.args.get("logical_operation_id")))

    def _effects(self, final_state: Mapping[str, object]) -> str:
        """The agent's net effects: fields its commits wrote that now differ from the start,
        and the cases it escalated. Versions, the ledger's history and the environment's
        own (fault-driven) changes elsewhere are left out."""
        initial: Mapping[str, object] = self._scenario.world.initial_state
        fields: dict[str, object] = {}
        for ns, rid, path in sorted(self._written):
            now = _at(final_state, (ns, rid, *path.split(".")))
            if now != _at(initial, (ns, rid, *path.split("."))):
                fields[f"{ns}:{rid}:{path}"] = None if now is _MISSING else now
        return digest_of({"fields": fields, "escalations": sorted(self._escalated)})

    def trace(self) -> EpisodeTrace:
        if self._trace is None:
            self._trace = self._env.finalize(self._report)
        return self._trace

    def state(self) -> JSONObject:
        return self.trace().as_json()

    def represent(self, rep: Representation) -> JSONObject:
        data = self.state()
        final_state = data.get("final_state")
        if isinstance(final_state, dict):
            data["final_state"] = represent(final_state, rep)
        return data

    def digest(self) -> StateDigest:
        trace = self.trace()
        world = digest_of(
            {
                "final_state": trace.final_state,
                "ledger": [row.as_json() for row in trace.side_effects],
            }
        )
        events = tuple(digest_of(e.as_json()) for e in trace.events)
        return StateDigest(
            world=world,
            log=events + tuple(a.digest for a in self.log()),
            effects=self._effects(trace.final_state),
        )

    def reset_world(self) -> None:
        self._env = Environment(self._scenario)
        self._facade = ToolFacade(self._env)
        self._calls = []
        self._report = _default_report()
        self._trace = None
        self._written, self._escalated = set(), set()

    def copy(self) -> V1World:
        other = V1World(self._scenario)
        for action in self._calls:
            other.apply_effect(action)
        other._log = list(self._log)
        return other

    def load(self, other: World) -> None:
        if not isinstance(other, V1World):
            raise AuditError("V1World.load: expected a V1World checkpoint")
        source = other.copy()
        self._env, self._facade = source._env, source._facade
        self._calls, self._report = source._calls, source._report
        self._written, self._escalated = source._written, source._escalated
        self._log = list(other._log)
        self._trace = None


class V1Domain:
    """A scenario pack as audit tasks; references recorded from ``full_lifecycle``."""

    primary_component = OUTCOME_COMPONENT

    def __init__(
        self,
        pack: ScenarioPack,
        *,
        declared: Mapping[str, Sequence[Action]] | None = None,
        reference_adapter: ExecutionAdapter | None = None,
    ) -> None:
        self._pack = pack
        self.name = f"v1/{pack.pack_id}"
        self._scenarios = {s.id: s for s in pack.scenarios}
        adapter = reference_adapter or baseline(Profile.FULL_LIFECYCLE)
        declared = declared or {}
        unknown = sorted(set(declared) - set(self._scenarios))
        if unknown:
            raise AuditError(
                f"declared references for unknown scenarios {unknown} in pack {pack.pack_id}"
            )
        self._references = {
            sid: tuple(declared[sid]) if sid in declared else record_reference(s, adapter)
            for sid, s in self._scenarios.items()
        }

    @property
    def pack(self) -> ScenarioPack:
        return self._pack

    def scenario(self, task: str) -> Scenario:
        try:
            return self._scenarios[task]
        except KeyError:
            raise AuditError(
                f"{self.name}: no scenario {task!r} (fix: see `cavbench audit list`)"
            ) from None

    def tasks(self) -> tuple[str, ...]:
        return tuple(self._scenarios)

    def reference(self, task: str) -> tuple[Action, ...]:
        self.scenario(task)
        return self._references[task]

    def closing_action(self, task: str) -> Action | None:
        return CLOSING_ACTION

    def new_world(self, task: str) -> V1World:
        return V1World(self.scenario(task))


def verdict_to_score(verdict: Verdict) -> ScoreResult:
    """A verdict as components whose conjunction is ``commit_valid_success``."""
    comps = [
        Component(OUTCOME_COMPONENT, verdict.outcome_success),
        Component(COMMITS_COMPONENT, not verdict.findings),
    ]
    comps += [
        Component(dim.value, status is not DimensionStatus.FAIL)
        for dim, status in verdict.dimensions.items()
    ]
    note = ",".join(verdict.failure_codes)
    return ScoreResult(verdict.commit_valid_success, tuple(comps), note=note)


class V1Oracle:
    """cavbench's evaluator under a scoring rule, reading the trace recorded so far."""

    def __init__(self, domain: V1Domain, rule: ScoringRule = ScoringRule.V1) -> None:
        self._domain = domain
        self._rule = rule
        self.name = rule.value

    def score(self, env: OracleEnv) -> ScoreResult:
        env.probe()
        live = env.live
        # The world's own trace when the oracle is handed the world itself; through the
        # JSON state when it is handed another view of it (D6), which is what it reads.
        trace = live.trace() if isinstance(live, V1World) else EpisodeTrace.from_json(live.state())
        return verdict_to_score(evaluate(self._domain.scenario(env.task), trace, self._rule))


def v1_target_spec(
    pack: str | ScenarioPack,
    *,
    rule: ScoringRule = ScoringRule.V1,
    declared: Mapping[str, Sequence[Action]] | None = None,
) -> TargetSpec:
    """The ``v1`` evaluator over ``pack`` as an injectable target."""
    loaded = load_pack(pack) if isinstance(pack, str) else pack
    domain = V1Domain(loaded, declared=declared)
    suffix = "" if rule is ScoringRule.V1 else f"@{rule.value}"
    name = f"v1/{loaded.pack_id}{suffix}"
    return TargetSpec(
        name=name,
        description=(
            f"cavbench's {rule.value} evaluator over {loaded.pack_id} ({len(domain.tasks())} "
            "scenarios); reference = the full_lifecycle baseline's facade calls"
        ),
        correct=kit_factory(domain, lambda: V1Oracle(domain, rule), name=name),
        domain=domain,
        oracle_factory=lambda: V1Oracle(domain, rule),
    )
