"""The eight checks: pure functions over a target factory and a plan.

Each check creates the targets it needs from the factory (a fresh target per run unless the
check is about a long-lived one), drives them only through the protocol, and returns a
:class:`CheckResult`: pass, fail or not applicable, with the reason. A check never reports
a pass for a probe that did not apply.

The plan (:func:`plan_audit`) is derived once per target without ever calling ``score``:
which reference actions change the world, the partial and near-miss trajectories, and the
task pairs for INV-3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np

from cavbench.audit._protocol import (
    Action,
    ActionKind,
    AuditError,
    AuditTarget,
    InjectedFault,
    ScoreResult,
    StateDigest,
    TargetFactory,
)
from cavbench.audit._vocab import CheckId, CheckStatus


class Trajectory(StrEnum):
    """The trajectories the checks drive."""

    NULL = "null"
    PARTIAL = "partial"
    REFERENCE = "reference"
    NEAR_MISS = "near_miss"


@dataclass(frozen=True, slots=True)
class ClosedState:
    """What the closing action does to the state by itself, learnt without scoring: the
    trajectory, then the closing action applied as an ordinary tool call."""

    world: str
    effects: str | None
    added: int
    """Log entries the closing action added (at least one is always allowed)."""
    log: tuple[str, ...] = ()
    """The log after it (its closing entry logged as a tool call, not as the close)."""

    def matches(self, before: StateDigest, after: StateDigest) -> bool:
        """``after`` is ``before`` plus the closing action's own effect and log entries:
        the same world, and the log either ``before``'s plus at most ``added`` entries or
        this log but for one entry (the closing turn, logged with another kind)."""
        if after.world != self.world or after.effects != self.effects:
            return False
        n = len(before.log)
        if after.log[:n] == before.log and len(after.log) - n <= self.added:
            return True
        differ = sum(a != b for a, b in zip(after.log, self.log, strict=False))
        return len(after.log) == len(self.log) and differ <= 1


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """What the checks need to know about one task, derived without scoring."""

    task: str
    reference: tuple[Action, ...]
    changing: tuple[int, ...]
    """Indices of reference actions that changed the state (``StateDigest.net``)."""
    closing: Action | None
    changes_state: bool
    """The reference ends in another state than the task starts in (its net effect)."""
    near_miss_differs: bool = False
    """The near miss ends in another state than the reference (so it really misses)."""
    closed: tuple[ClosedState, ...] = ()
    """For the null, partial and reference trajectory: the state after the closing action's
    own effect (empty when the task has no closing action)."""

    @property
    def partial(self) -> tuple[Action, ...]:
        """The reference cut before its last state-changing action (half of it if none)."""
        cut = self.changing[-1] if self.changing else len(self.reference) // 2
        return self.reference[:cut]

    @property
    def near_miss(self) -> tuple[Action, ...] | None:
        """The reference minus its last state-changing action, if at least one state-changing
        action is left. Later calls of the same tool go too: a retry or a repeat would redo
        the dropped effect and the "miss" would not miss."""
        if len(self.changing) < 2:
            return None
        last = self.changing[-1]
        tool = self.reference[last].name
        return self.reference[:last] + tuple(
            a for a in self.reference[last + 1 :] if a.name != tool
        )

    @property
    def has_near_miss(self) -> bool:
        """CTL-3 applies: a near miss exists and it ends somewhere the reference does not."""
        return self.near_miss is not None and self.near_miss_differs

    def actions(self, trajectory: Trajectory) -> tuple[Action, ...]:
        match trajectory:
            case Trajectory.NULL:
                return ()
            case Trajectory.PARTIAL:
                return self.partial
            case Trajectory.REFERENCE:
                return self.reference
            case Trajectory.NEAR_MISS:
                miss = self.near_miss
                if miss is None:
                    raise AuditError(f"task {self.task}: no near miss (fewer than two changes)")
                return miss


@dataclass(frozen=True, slots=True)
class AuditPlan:
    tasks: tuple[TaskPlan, ...]
    pairs: tuple[tuple[str, str], ...]
    """Unordered task pairs for INV-3; each is run in both orders."""

    def task(self, task: str) -> TaskPlan:
        for tp in self.tasks:
            if tp.task == task:
                return tp
        raise AuditError(f"task {task!r} is not in the audit plan")


def plan_audit(
    factory: TargetFactory,
    tasks: Sequence[str] | None = None,
    *,
    seed: int = 0,
    max_pairs: int = 8,
) -> AuditPlan:
    """Derive the plan by applying each reference on one target and watching the digests.

    ``score`` is never called, so the plan does not depend on the oracle under audit.
    Pairs for INV-3 are consecutive tasks of a seeded permutation (``max_pairs`` at most).
    """
    target = factory()
    available = tuple(target.tasks())
    chosen = tuple(available if tasks is None else tasks)
    missing = [t for t in chosen if t not in available]
    if missing:
        raise AuditError(
            f"target {target.name}: unknown task(s) {missing} "
            f"(fix: choose from {list(available)[:6]}…, see `cavbench audit list`)"
        )
    plans: list[TaskPlan] = []
    for task in chosen:
        target.reset(task)
        reference = tuple(target.reference(task))
        changing: list[int] = []
        start = before = target.read_state().net
        for i, action in enumerate(reference):
            target.apply(action)
            after = target.read_state().net
            if after != before:
                changing.append(i)
            before = after
        tp = TaskPlan(
            task, reference, tuple(changing), target.closing_action(task), before != start
        )
        miss = tp.near_miss
        if miss is not None:
            target.reset(task)
            for action in miss:
                target.apply(action)
            tp = replace(tp, near_miss_differs=target.read_state().net != before)
        if tp.closing is not None:
            tp = replace(tp, closed=tuple(_closed(target, tp, traj) for traj in _TRIO))
        plans.append(tp)
    order = [chosen[i] for i in np.random.default_rng(seed).permutation(len(chosen))]
    pairs = tuple((order[i], order[i + 1]) for i in range(len(order) - 1))[:max_pairs]
    return AuditPlan(tuple(plans), pairs)


def _closed(target: AuditTarget, tp: TaskPlan, trajectory: Trajectory) -> ClosedState:
    """The closing action's own effect, applied as a tool call so that nothing scores."""
    assert tp.closing is not None
    target.reset(tp.task)
    for action in tp.actions(trajectory):
        target.apply(action)
    before = len(target.read_state().log)
    target.apply(replace(tp.closing, kind=ActionKind.TOOL))
    after = target.read_state()
    return ClosedState(after.world, after.effects, max(1, len(after.log) - before), after.log)


@dataclass(frozen=True, slots=True)
class ScoreRaised:
    """``score()`` raised instead of returning a verdict."""

    error_type: str
    message: str = field(compare=False)

    def brief(self) -> str:
        return f"raised {self.error_type}"


Outcome = ScoreResult | ScoreRaised


def _describe(outcome: Outcome) -> str:
    return outcome.brief()


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's outcome on one oracle variant, with its evidence counts."""

    check: CheckId
    status: CheckStatus
    reason: str
    runs: int
    failed_runs: int
    not_applicable_runs: int
    usable: int = 0
    """Tasks (INV-3: task pairs) on which at least one run of the check applied."""
    universe: int = 0
    """Tasks (INV-3: task pairs) in the audit."""
    failed_by_raise: int = 0
    """Failed runs that failed only because ``score()`` raised (no verdict to compare)."""

    @property
    def usable_text(self) -> str:
        unit = "pairs" if self.check is CheckId.INV_3 else "tasks"
        return f"{self.usable}/{self.universe} {unit}"


class _Tally:
    """Collects per-run results and turns them into a :class:`CheckResult`."""

    def __init__(self, check: CheckId, universe: int) -> None:
        self.check = check
        self.universe = universe
        self.runs = 0
        self.failures: list[str] = []
        self.not_applicable: list[str] = []
        self.used: set[str] = set()
        self.by_raise = 0

    def ok(self, unit: str) -> None:
        self.runs += 1
        self.used.add(unit)

    def fail(self, unit: str, where: str, why: str, *, raised: bool = False) -> None:
        self.runs += 1
        self.used.add(unit)
        self.failures.append(f"{where}: {why}")
        self.by_raise += raised

    def skip(self, where: str, why: str) -> None:
        self.runs += 1
        self.not_applicable.append(f"{where}: {why}")

    def result(self, held: str, none_apply: str) -> CheckResult:
        n_fail, n_na = len(self.failures), len(self.not_applicable)
        if n_fail:
            status = CheckStatus.FAIL
            reason = f"{n_fail} of {self.runs} runs failed; first: {self.failures[0]}"
        elif self.runs in (0, n_na):
            status = CheckStatus.NOT_APPLICABLE
            reason = none_apply if self.runs == 0 else f"{none_apply}; {self.not_applicable[0]}"
        else:
            status = CheckStatus.PASS
            reason = f"{self.runs - n_na} runs {held}"
            if n_na:
                reason += f"; {n_na} runs not applicable (first: {self.not_applicable[0]})"
        return CheckResult(
            self.check,
            status,
            reason,
            self.runs,
            n_fail,
            n_na,
            usable=len(self.used),
            universe=self.universe,
            failed_by_raise=self.by_raise,
        )


def _drive(factory: TargetFactory, task: str, actions: Sequence[Action]) -> AuditTarget:
    target = factory()
    target.reset(task)
    for action in actions:
        target.apply(action)
    return target


def _score(target: AuditTarget) -> Outcome:
    try:
        return target.score()
    except Exception as exc:  # an oracle crash is evidence, not an audit error
        return ScoreRaised(type(exc).__name__, str(exc))


def _state_change(before: StateDigest, after: StateDigest) -> str:
    parts = []
    if after.world != before.world:
        parts.append("world changed")
    if after.log != before.log:
        parts.append(f"log {len(before.log)}->{len(after.log)} entries")
    return ", ".join(parts) or "unchanged"


_TRIO = (Trajectory.NULL, Trajectory.PARTIAL, Trajectory.REFERENCE)


def _raised(*outcomes: Outcome) -> bool:
    return any(isinstance(o, ScoreRaised) for o in outcomes)


def check_inv1(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """INV-1 mutation: ``s = read_state(); score(); read_state() == s``.

    A ``score()`` that raises is not a failure here (the controls see it); only the state
    counts."""
    tally = _Tally(CheckId.INV_1, len(plan.tasks))
    for tp in plan.tasks:
        for traj in _TRIO:
            target = _drive(factory, tp.task, tp.actions(traj))
            before = target.read_state()
            outcome = _score(target)
            after = target.read_state()
            where = f"{tp.task}/{traj}"
            if after != before:
                detail = (
                    f" (and score() {outcome.brief()})" if isinstance(outcome, ScoreRaised) else ""
                )
                tally.fail(
                    tp.task,
                    where,
                    f"scoring changed the state ({_state_change(before, after)}){detail}",
                )
            else:
                tally.ok(tp.task)
    return tally.result("left the state unchanged", "no task to score")


def check_inv2(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """INV-2 repeatability: on unchanged state ``score() == score()`` for the null, a partial
    and the reference trajectory; and the same actions get the same verdict when scored
    again later in one episode (a verdict may not stick from an earlier state). Raising
    the same error twice counts as repeating."""
    tally = _Tally(CheckId.INV_2, len(plan.tasks))
    for tp in plan.tasks:
        first: dict[Trajectory, Outcome] = {}
        for traj in _TRIO:
            target = _drive(factory, tp.task, tp.actions(traj))
            a, b = _score(target), _score(target)
            first[traj] = a
            where = f"{tp.task}/{traj}"
            if a != b:
                why = f"score() gave {_describe(a)} then {_describe(b)}"
                tally.fail(tp.task, where, why, raised=_raised(a, b))
            else:
                tally.ok(tp.task)
        # One growing episode: score after the null, the partial and the full reference.
        target = factory()
        target.reset(tp.task)
        done: tuple[Action, ...] = ()
        for traj in _TRIO:
            for action in tp.actions(traj)[len(done) :]:
                target.apply(action)
            done = tp.actions(traj)
            later = _score(target)
            where = f"{tp.task}/episode-after-{traj}"
            if later != first[traj]:
                why = f"scored {_describe(later)} in one episode, {_describe(first[traj])} alone"
                tally.fail(tp.task, where, why, raised=_raised(later, first[traj]))
            else:
                tally.ok(tp.task)
    return tally.result("repeated their verdict", "no task to score")


def check_inv3(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """INV-3 order dependence: B's verdict on a fresh target equals B's verdict after A was
    run (its reference) and scored on the same long-lived target, in both orders; B runs
    both its null and its reference trajectory."""
    tally = _Tally(CheckId.INV_3, len(plan.pairs))
    for a_task, b_task in plan.pairs:
        unit = f"{a_task}+{b_task}"
        for first, second in ((a_task, b_task), (b_task, a_task)):
            a_plan, b_plan = plan.task(first), plan.task(second)
            for traj in (Trajectory.NULL, Trajectory.REFERENCE):
                alone = _score(_drive(factory, second, b_plan.actions(traj)))
                target = _drive(factory, first, a_plan.reference)
                _score(target)
                target.reset(second)
                for action in b_plan.actions(traj):
                    target.apply(action)
                after = _score(target)
                where = f"{first}->{second}/{traj}"
                if after != alone:
                    why = f"{_describe(after)} after {first}, {_describe(alone)} on a fresh target"
                    tally.fail(unit, where, why, raised=_raised(after, alone))
                else:
                    tally.ok(unit)
    return tally.result("were order-independent", "fewer than two tasks, no pair to run")


class FaultProbe:
    """A one-shot probe for INV-4: raises :class:`InjectedFault` the first time it is called."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls == 1:
            raise InjectedFault("injected by the INV-4 probe")

    @property
    def fired(self) -> bool:
        return self.calls > 0


def check_inv4(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """INV-4 exception recovery: with a fault injected inside scoring, an escaping exception
    must leave the state as it was and the next ``score()`` must give the clean verdict. If
    the oracle swallows the fault (or never reaches the probe) the run is not applicable."""
    tally = _Tally(CheckId.INV_4, len(plan.tasks))
    for tp in plan.tasks:
        for traj in _TRIO:
            where = f"{tp.task}/{traj}"
            clean = _score(_drive(factory, tp.task, tp.actions(traj)))
            target = _drive(factory, tp.task, tp.actions(traj))
            before = target.read_state()
            probe = FaultProbe()
            target.arm_fault(probe)
            try:
                target.score()
            except Exception as exc:
                if not probe.fired:
                    why = f"score() raised {type(exc).__name__} before the probe"
                    tally.fail(tp.task, where, why, raised=True)
                    continue
            else:
                why = "fault swallowed by the oracle" if probe.fired else "probe never reached"
                tally.skip(where, why)
                continue
            after = target.read_state()
            if after != before:
                why = f"the fault left the state dirty ({_state_change(before, after)})"
                tally.fail(tp.task, where, why)
                continue
            again = _score(target)
            if again != clean:
                why = f"after the fault scored {_describe(again)}, clean {_describe(clean)}"
                tally.fail(tp.task, where, why, raised=_raised(again, clean))
            else:
                tally.ok(tp.task)
    return tally.result(
        "recovered from the injected fault", "the injected fault never escaped score()"
    )


def check_inv5(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """INV-5 session termination: after the closing turn (which may score internally) the
    state is the one the agent left plus the closing turn's own effect (learnt in the plan
    by applying it as a tool call), and its log entries. A closing turn that raises is
    judged by the state it leaves, like INV-1."""
    tally = _Tally(CheckId.INV_5, len(plan.tasks))
    for tp in plan.tasks:
        if tp.closing is None:
            continue
        for traj, expected in zip(_TRIO, tp.closed, strict=True):
            target = _drive(factory, tp.task, tp.actions(traj))
            before = target.read_state()
            where = f"{tp.task}/{traj}"
            raised = ""
            try:
                target.apply(tp.closing)
            except Exception as exc:  # scoring inside the closing turn may crash; state counts
                raised = f" (and the closing action raised {type(exc).__name__})"
            after = target.read_state()
            if not expected.matches(before, after):
                change = _state_change(before, after)
                tally.fail(
                    tp.task, where, f"ending the session changed the state ({change}){raised}"
                )
            else:
                tally.ok(tp.task)
    return tally.result("ended with the agent's state", "the target declares no closing action")


def _control(
    check: CheckId,
    factory: TargetFactory,
    plan: AuditPlan,
    trajectory: Trajectory,
    want_pass: bool,
    applies: Callable[[TaskPlan], bool],
    held: str,
    none_apply: str,
) -> CheckResult:
    tally = _Tally(check, len(plan.tasks))
    for tp in plan.tasks:
        if not applies(tp):
            continue
        outcome = _score(_drive(factory, tp.task, tp.actions(trajectory)))
        where = f"{tp.task}/{trajectory}"
        if isinstance(outcome, ScoreRaised):
            # No verdict is not a pass: it fails CTL-1 and satisfies "must not pass".
            if want_pass:
                tally.fail(tp.task, where, f"score() {outcome.brief()}", raised=True)
            else:
                tally.ok(tp.task)
        elif outcome.passed != want_pass:
            tally.fail(tp.task, where, f"scored {_describe(outcome)}")
        else:
            tally.ok(tp.task)
    return tally.result(held, none_apply)


def check_ctl1(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """CTL-1: the reference trajectory passes."""
    return _control(
        CheckId.CTL_1, factory, plan, Trajectory.REFERENCE, True, lambda tp: True,
        "passed their reference", "no task to score",
    )  # fmt: skip


def check_ctl2(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """CTL-2: the null trajectory fails, on tasks whose reference changes state (net)."""
    return _control(
        CheckId.CTL_2, factory, plan, Trajectory.NULL, False, lambda tp: tp.changes_state,
        "failed the null trajectory", "no task's reference changes the state",
    )  # fmt: skip


def check_ctl3(factory: TargetFactory, plan: AuditPlan) -> CheckResult:
    """CTL-3: the reference minus its last state-changing action (one left) fails; tasks
    where the near miss still ends in the reference's state are skipped (not a miss)."""
    return _control(
        CheckId.CTL_3, factory, plan, Trajectory.NEAR_MISS, False,
        lambda tp: tp.has_near_miss,
        "failed the near miss",
        "no task's reference has two state-changing actions whose last one matters",
    )  # fmt: skip


Check = Callable[[TargetFactory, AuditPlan], CheckResult]
CHECKS: dict[CheckId, Check] = {
    CheckId.INV_1: check_inv1,
    CheckId.INV_2: check_inv2,
    CheckId.INV_3: check_inv3,
    CheckId.INV_4: check_inv4,
    CheckId.INV_5: check_inv5,
    CheckId.CTL_1: check_ctl1,
    CheckId.CTL_2: check_ctl2,
    CheckId.CTL_3: check_ctl3,
}


def _definition(check: CheckId, fn: Check) -> str:
    """The first paragraph of the check's docstring, on one line, without its label."""
    text = " ".join((fn.__doc__ or "").split("\n\n")[0].split()).replace("``", "`")
    for label in (f"{check.value} {check.covers}:", f"{check.value}:"):
        text = text.removeprefix(label).strip()
    return text


CHECK_DOCS: dict[CheckId, str] = {check: _definition(check, fn) for check, fn in CHECKS.items()}


def run_checks(
    factory: TargetFactory, plan: AuditPlan, checks: Sequence[CheckId] = tuple(CheckId)
) -> tuple[CheckResult, ...]:
    """Run ``checks`` (all eight by default) in order."""
    return tuple(CHECKS[c](factory, plan) for c in checks)
