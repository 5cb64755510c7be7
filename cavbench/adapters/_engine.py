"""One capability-parameterised engine behind the five baseline profiles (SPEC c).

A profile is a set of four capabilities; the engine consults them at each decision:
the intent/authority gate, the commit-time state guard, idempotency reconciliation
(stable keys + status check after an ambiguous ack) and the recovery coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from cavbench.adapters._protocol import AdapterResult
from cavbench.runtime.session import AdapterSession, ToolFacade, ToolStatus
from cavbench.scenarios import (
    OnBlock,
    OnFailure,
    PlannedStep,
    PreconditionScope,
    ScenarioView,
    StepKind,
    Trigger,
)
from cavbench.scenarios.predicates import CompiledPredicate, compile_predicate
from cavbench.trace import JSON, CompletionStatus, Resource

MAX_WRITE_ATTEMPTS = 4
ENGINE_VERSION = "1.0.0"


class Profile(StrEnum):
    """The five baseline profiles, in canonical order."""

    DIRECT = "direct"
    POLICY_GATED = "policy_gated"
    COMMIT_GUARDED = "commit_guarded"
    RECONCILED = "reconciled"
    FULL_LIFECYCLE = "full_lifecycle"


class StepStatus(StrEnum):
    COMMITTED = "committed"
    BLOCKED = "blocked"
    STALE_BLOCKED = "stale_blocked"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    PARTIAL = "partial"
    PENDING_RECOVERY = "pending_recovery"
    ESCALATED = "escalated"
    CLARIFIED = "clarified"


class GateReason(StrEnum):
    AMBIGUOUS_REFERENCE = "ambiguous_reference"
    INTENT_MISMATCH = "intent_mismatch"
    PRECONDITION_FAILED = "precondition_failed"
    SCOPE_VIOLATION = "scope_violation"
    AUTHORITY_VIOLATION = "authority_violation"
    TENANT_VIOLATION = "tenant_violation"
    DELEGATION_LIMIT = "delegation_limit"


_NAMES = {p: p.value for p in Profile}
_COMPENSATE, _READ, _WRITE = StepKind.COMPENSATE, StepKind.READ, StepKind.WRITE
_COMMITTED = StepStatus.COMMITTED


@dataclass(frozen=True, slots=True)
class Capabilities:
    intent_authority_gate: bool = False
    commit_time_state_guard: bool = False
    idempotency_reconciliation: bool = False
    recovery_coordinator: bool = False


PROFILE_CAPABILITIES: Mapping[Profile, Capabilities] = {
    Profile.DIRECT: Capabilities(),
    Profile.POLICY_GATED: Capabilities(intent_authority_gate=True),
    Profile.COMMIT_GUARDED: Capabilities(intent_authority_gate=True, commit_time_state_guard=True),
    Profile.RECONCILED: Capabilities(True, True, True, False),
    Profile.FULL_LIFECYCLE: Capabilities(True, True, True, True),
}

_FINAL_MESSAGES: Mapping[CompletionStatus, str] = {
    CompletionStatus.SUCCESS: "Request completed.",
    CompletionStatus.PARTIAL: "Request partially completed; see diagnostics for unresolved items.",
    CompletionStatus.PENDING_RECOVERY: "Request could not be fully completed; escalated for manual recovery.",
    CompletionStatus.FAILED: "Request could not be completed.",
}


@dataclass(frozen=True, slots=True)
class _StepPlan:
    """What the engine derives from one plan step, once per view (`_compile`): the target,
    the compiled precondition, the gate's state-independent reasons and the idempotency
    keys of each attempt."""

    step: PlannedStep
    target: tuple[str, str]
    precondition: CompiledPredicate | None
    always: bool
    """The precondition is checked on every write (`precondition_scope: always`), not at the gate."""
    before: tuple[GateReason, ...]
    """Gate reasons that precede the precondition's: ambiguous reference, intent mismatch."""
    over_scope: bool
    over_delegation: bool
    keys: tuple[str, ...]
    """The stable idempotency key, then one key per attempt (empty without a logical id)."""

    def gate_reasons(self, tenant_id: str, observed: Mapping[str, JSON]) -> list[GateReason]:
        """Why the literal request does not license this write, in the reference's order."""
        reasons = list(self.before)
        check = self.precondition
        if check is not None and not self.always and not check(observed):
            reasons.append(GateReason.PRECONDITION_FAILED)
        if self.over_scope:
            reasons.append(GateReason.SCOPE_VIOLATION)
        owner = observed.get("owner")
        if owner is not None and owner != "self":
            reasons.append(GateReason.AUTHORITY_VIOLATION)
        tenant = observed.get("tenant")
        if tenant is not None and tenant != tenant_id:
            reasons.append(GateReason.TENANT_VIOLATION)
        if self.over_delegation:
            reasons.append(GateReason.DELEGATION_LIMIT)
        return reasons


def _compile_step(view: ScenarioView, step: PlannedStep) -> _StepPlan:
    policy = view.policy
    before: list[GateReason] = []
    if policy.ambiguous_reference:
        before.append(GateReason.AMBIGUOUS_REFERENCE)
    category = step.action_category
    if category and policy.requested_intent and category not in policy.requested_intent:
        before.append(GateReason.INTENT_MISMATCH)
    amount = step.action_amount
    if amount is not None:
        max_amount = policy.max_amount
        over_scope = max_amount is not None and amount > max_amount
    else:
        over_scope = False
    if not over_scope and step.action_scope:
        items = step.scope_item_ids
        allowed_items = policy.allowed_item_ids
        over_scope = (
            bool(items) and allowed_items is not None and not set(items) <= set(allowed_items)
        )
    over_delegation = False
    if amount is not None and view.principal.delegation:
        limit = view.principal.delegation_max_amount
        over_delegation = limit is not None and amount > limit
    logical_id = step.logical_operation_id
    keys: tuple[str, ...] = ()
    if logical_id is not None:
        stable = f"{view.id}:{logical_id}"
        attempts = range(1, MAX_WRITE_ATTEMPTS + 1)
        keys = (stable, *(f"{stable}:attempt{n}" for n in attempts))
    pre = step.precondition
    return _StepPlan(
        step=step,
        target=(step.namespace or "", step.resource_id or ""),
        precondition=compile_predicate(pre) if pre is not None else None,
        always=step.precondition_scope is PreconditionScope.ALWAYS,
        before=tuple(before),
        over_scope=over_scope,
        over_delegation=over_delegation,
        keys=keys,
    )


def _compile(view: ScenarioView) -> dict[int, _StepPlan]:
    """Every step of the view's plan (narrowed variants included), by object identity: the
    view holds them, so their ids stay theirs while this cache (kept on the view) lives."""
    plans: dict[int, _StepPlan] = {}
    for first in view.plan.steps:
        step: PlannedStep | None = first
        while step is not None:
            plans[id(step)] = _compile_step(view, step)
            step = step.narrowed
    return plans


@dataclass(slots=True)
class _Episode:
    """Mutable bookkeeping for one run of the engine (never shared across runs)."""

    session: AdapterSession
    view: ScenarioView
    tools: ToolFacade
    plans: dict[int, _StepPlan]
    statuses: dict[str, StepStatus] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    worst: CompletionStatus = CompletionStatus.SUCCESS
    observed: dict[tuple[str, str], Resource] = field(default_factory=dict)

    def downgrade(self, status: CompletionStatus) -> None:
        if status.severity > self.worst.severity:
            self.worst = status

    def plan(self, step: PlannedStep) -> _StepPlan:
        found = self.plans.get(id(step))
        if found is None or found.step is not step:  # a step from outside the view's plan
            found = _compile_step(self.view, step)
        return found


EngineEpisode = _Episode
"""The engine's per-episode bookkeeping (opaque to callers of `start`/`step`/`finish`)."""


@dataclass(frozen=True, slots=True)
class BaselineAdapter:
    """The deterministic plan-following engine, configured by capabilities."""

    profile: Profile
    capabilities: Capabilities
    version: str = ENGINE_VERSION

    @property
    def name(self) -> str:
        return _NAMES[self.profile]

    def run(self, session: AdapterSession) -> AdapterResult:
        ep = self.start(session)
        for step in ep.view.plan.steps:
            if step.kind is not _COMPENSATE and (not step.depends_on or self._triggered(ep, step)):
                self.step(ep, step)
        return self.finish(ep)

    # -- the strategy one step at a time (for framework adapters that drive it as a graph) --
    def start(self, session: AdapterSession) -> EngineEpisode:
        """Fresh bookkeeping for one episode."""
        view = session.scenario
        # The plan is compiled once per view object: the pack's shared view for our own
        # profiles, an episode's own copy for anything isolated (see `ScenarioView.compiled`).
        plans = view.compiled("adapters.engine", _compile)
        return _Episode(session=session, view=view, tools=session.tools, plans=plans)

    def runnable(self, ep: EngineEpisode, step: PlannedStep) -> bool:
        """Whether the plan loop runs `step` now (compensations run only on failure)."""
        return step.kind is not StepKind.COMPENSATE and self._triggered(ep, step)

    def step(self, ep: EngineEpisode, step: PlannedStep) -> None:
        """Run one plan step: read, write (gate, guard, reconcile, recover), escalate, clarify."""
        session = ep.session
        kind = step.kind
        if kind is _WRITE:  # the common kinds first, without the enum lookups of `match`
            ep.statuses[step.step_id] = self._write(ep, step)
            return
        if kind is _READ:
            self._cached_read(ep, step)
            ep.statuses[step.step_id] = _COMMITTED
            return
        match kind:
            case StepKind.ESCALATE:
                session.escalate(f"{step.step_id}: escalation required by task plan")
                ep.statuses[step.step_id] = StepStatus.ESCALATED
            case StepKind.CLARIFY:
                session.clarify(f"{step.step_id}: clarification required by task plan")
                ep.statuses[step.step_id] = StepStatus.CLARIFIED
            case StepKind.STATUS_CHECK:
                ep.statuses[step.step_id] = StepStatus.COMMITTED
            case StepKind.RESPOND | StepKind.COMPENSATE:
                pass

    def finish(self, ep: EngineEpisode) -> AdapterResult:
        """The episode's report."""
        return AdapterResult(
            final_message=_FINAL_MESSAGES[ep.worst],
            completion_status=ep.worst,
            metadata={
                "adapter_name": _NAMES[self.profile],
                "adapter_version": self.version,
                "notes": list(ep.notes),
            },
        )

    # -- plan control -------------------------------------------------------------------
    @staticmethod
    def _triggered(ep: _Episode, step: PlannedStep) -> bool:
        if not step.depends_on:  # CAV-Bench: an empty string is no dependency
            return True
        status = ep.statuses.get(step.depends_on)
        match step.trigger:
            case Trigger.ON_DEPENDENCY_SUCCESS:
                return status is StepStatus.COMMITTED
            case Trigger.ON_DEPENDENCY_FAILURE:
                return status in (StepStatus.FAILED, StepStatus.BLOCKED)
            case _:
                return True

    # -- reads --------------------------------------------------------------------------
    def _cached_read(self, ep: _Episode, step: PlannedStep) -> Resource:
        target = ep.plan(step).target
        cached = ep.observed.get(target)
        return cached if cached is not None else self._fresh_read(ep, target)

    @staticmethod
    def _fresh_read(ep: _Episode, target: tuple[str, str]) -> Resource:
        result = ep.tools.read(*target)
        value = result.data if isinstance(result.data, dict) else {}
        ep.observed[target] = value
        return value

    # -- writes -------------------------------------------------------------------------
    def _write(self, ep: _Episode, step: PlannedStep) -> StepStatus:
        plan = ep.plan(step)
        cached = ep.observed.get(plan.target)
        observed = cached if cached is not None else self._fresh_read(ep, plan.target)
        holds = plan.precondition
        if holds is not None and plan.always and not holds(observed):
            ep.notes.append(f"{step.step_id} is a no-op given current state; skipping")
            return StepStatus.BLOCKED
        if self.capabilities.intent_authority_gate:
            reasons = plan.gate_reasons(ep.view.principal.tenant_id, observed)
            if reasons:
                if step.narrowed is None:
                    return self._block(ep, step, reasons[0])
                plan = ep.plan(step.narrowed)
                observed = self._fresh_read(ep, plan.target)
        return self._commit_loop(ep, plan, observed)

    def _block(self, ep: _Episode, step: PlannedStep, reason: GateReason) -> StepStatus:
        ep.notes.append(f"{step.step_id} blocked: {reason}")
        match ep.view.policy.on_block:
            case OnBlock.ESCALATE:
                ep.session.escalate(f"{step.step_id} blocked ({reason}); requires approval")
                ep.downgrade(CompletionStatus.PENDING_RECOVERY)
            case OnBlock.CLARIFY:
                ep.session.clarify(f"{step.step_id} is ambiguous ({reason}); please clarify")
                ep.downgrade(CompletionStatus.PARTIAL)
            case OnBlock.REFUSE | OnBlock.RESPOND_ONLY:
                pass
        return StepStatus.BLOCKED

    def _commit_loop(self, ep: _Episode, plan: _StepPlan, observed: Resource) -> StepStatus:
        caps = self.capabilities
        tools = ep.tools
        step = plan.step
        logical_id = step.logical_operation_id
        if logical_id is None:
            # The reference asserts here; we skip the step with a note instead of crashing.
            ep.notes.append(f"{step.step_id} has no logical_operation_id; not executed")
            return StepStatus.INCOMPLETE
        keys = plan.keys
        guard = caps.commit_time_state_guard
        namespace, resource_id = plan.target
        for attempt in range(1, MAX_WRITE_ATTEMPTS + 1):
            version = observed.get("version")
            expected = version if guard and type(version) is int else None
            key = keys[0] if caps.idempotency_reconciliation else keys[attempt]
            result = tools.write(
                step_id=step.step_id,
                tool_name=step.tool_name or "unknown_tool",
                namespace=namespace,
                resource_id=resource_id,
                changes=step.changes,
                args=step.args,
                logical_operation_id=logical_id,
                idempotency_key=key,
                expected_version=expected,
            )
            match result.status:
                case ToolStatus.COMMITTED | ToolStatus.IDEMPOTENT_REPLAY:
                    return StepStatus.COMMITTED
                case ToolStatus.CONFLICT:
                    if not caps.commit_time_state_guard:
                        return StepStatus.BLOCKED
                    observed = self._fresh_read(ep, plan.target)
                    holds = plan.precondition
                    if holds is not None and not holds(observed):
                        ep.notes.append(
                            f"{step.step_id} precondition false at commit time; not retried"
                        )
                        return StepStatus.STALE_BLOCKED
                case ToolStatus.AMBIGUOUS:
                    if (
                        caps.idempotency_reconciliation
                        and tools.status_check(key).status is ToolStatus.COMMITTED
                    ):
                        return StepStatus.COMMITTED
                case ToolStatus.FAILED:
                    return self._on_failure(ep, step)
                case _:
                    pass
        return StepStatus.INCOMPLETE

    def _on_failure(self, ep: _Episode, step: PlannedStep) -> StepStatus:
        ep.notes.append(f"{step.step_id} failed")
        if not self.capabilities.recovery_coordinator:
            return StepStatus.FAILED
        match step.on_failure:
            case OnFailure.REPORT_PARTIAL:
                ep.downgrade(CompletionStatus.PARTIAL)
                return StepStatus.PARTIAL
            case OnFailure.ESCALATE:
                return self._escalate(ep, f"{step.step_id} failed and requires manual resolution")
            case OnFailure.COMPENSATE:
                comp = (
                    ep.view.plan.step(step.compensation_step_id)
                    if step.compensation_step_id
                    else None
                )
                if comp is None:
                    return self._escalate(ep, f"{step.step_id} failed and cannot be compensated")
                comp_plan = ep.plan(comp)
                observed = self._fresh_read(ep, comp_plan.target)
                if self._commit_loop(ep, comp_plan, observed) is StepStatus.COMMITTED:
                    ep.downgrade(CompletionStatus.PARTIAL)
                    return StepStatus.PARTIAL
                return self._escalate(ep, f"Compensation for {step.step_id} failed")

    @staticmethod
    def _escalate(ep: _Episode, reason: str) -> StepStatus:
        ep.session.escalate(reason)
        ep.downgrade(CompletionStatus.PENDING_RECOVERY)
        return StepStatus.PENDING_RECOVERY


def baseline(profile: Profile | str) -> BaselineAdapter:
    """The baseline adapter for a profile name."""
    chosen = Profile(profile)
    return BaselineAdapter(profile=chosen, capabilities=PROFILE_CAPABILITIES[chosen])


BASELINE_PROFILES: tuple[Profile, ...] = tuple(Profile)
