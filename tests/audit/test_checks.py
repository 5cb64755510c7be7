"""The eight checks on correct oracles, and their edge cases on hand-made targets."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cavbench.audit import (
    Action,
    ActionKind,
    CheckId,
    CheckStatus,
    Component,
    Probe,
    ScoreResult,
    StateDigest,
    TargetAudit,
    TaskPlan,
    VariantKind,
    plan_audit,
    run_checks,
)
from cavbench.audit._checks import check_ctl1, check_ctl2, check_ctl3, check_inv4


def test_correct_oracles_pass_all_eight_checks(any_audit: TargetAudit) -> None:
    correct = any_audit.correct
    assert [r.status for r in correct.results] == [CheckStatus.PASS] * 8, [
        r.reason for r in correct.results
    ]
    assert all(r.runs > 0 for r in correct.results)
    assert any_audit.problems() == ()


def _plan(reference: tuple[str, ...], changing: tuple[int, ...]) -> TaskPlan:
    return TaskPlan("t", tuple(Action(n) for n in reference), changing, None, bool(changing), True)


def test_near_miss_drops_the_last_change_and_its_later_repeats() -> None:
    plan = _plan(("read", "write", "escalate", "escalate", "report"), (1, 2))
    assert plan.near_miss is not None
    assert [a.name for a in plan.near_miss] == ["read", "write", "report"]
    assert [a.name for a in plan.partial] == ["read", "write"]


def test_no_near_miss_with_fewer_than_two_changes() -> None:
    assert _plan(("read", "write"), (1,)).near_miss is None
    assert not _plan(("read", "write"), (1,)).has_near_miss


class Counter:
    """A tiny target: the world is a counter; the task wants it at 2 (two increments)."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.value = 0
        self.log: list[str] = []
        self.probe: Probe | None = None

    @property
    def name(self) -> str:
        return f"counter-{self.mode}"

    def tasks(self) -> Sequence[str]:
        return ["a", "b"]

    def reference(self, task: str) -> Sequence[Action]:
        return [Action("inc"), Action("inc")]

    def closing_action(self, task: str) -> Action | None:
        return Action("bye", {}, ActionKind.CLOSE)

    def reset(self, task: str) -> None:
        self.value, self.log = 0, []

    def apply(self, action: Action) -> None:
        self.log.append(action.name)
        if action.name == "inc":
            self.value += 1

    def score(self) -> ScoreResult:
        probe, self.probe = self.probe, None
        if self.mode == "crash":
            raise RuntimeError("grader bug")
        if self.mode == "swallow":
            try:
                if probe:
                    probe()
            except Exception:
                return ScoreResult(True)
        elif probe:
            probe()
        ok = self.value == 2
        return ScoreResult(ok, (Component("value", ok),))

    def read_state(self) -> StateDigest:
        return StateDigest(str(self.value), tuple(self.log))

    def arm_fault(self, probe: Probe) -> None:
        self.probe = probe


def test_hand_made_target_passes_all_checks() -> None:
    plan = plan_audit(Counter)
    assert [tp.changing for tp in plan.tasks] == [(0, 1), (0, 1)]
    results = run_checks(Counter, plan)
    assert [r.status for r in results] == [CheckStatus.PASS] * 8


def test_a_crashing_oracle_fails_ctl1_but_not_the_negative_controls() -> None:
    plan = plan_audit(Counter)
    crashing = lambda: Counter("crash")  # noqa: E731
    assert check_ctl1(crashing, plan).status is CheckStatus.FAIL
    assert check_ctl2(crashing, plan).status is CheckStatus.PASS
    assert check_ctl3(crashing, plan).status is CheckStatus.PASS
    assert "raised RuntimeError" in check_ctl1(crashing, plan).reason


def test_inv4_is_not_applicable_when_the_fault_is_swallowed() -> None:
    plan = plan_audit(Counter)
    result = check_inv4(lambda: Counter("swallow"), plan)
    assert result.status is CheckStatus.NOT_APPLICABLE
    assert "swallowed" in result.reason
    assert result.not_applicable_runs == result.runs == 6


def test_plan_rejects_unknown_tasks() -> None:
    from cavbench.audit import AuditError

    with pytest.raises(AuditError, match="unknown task"):
        plan_audit(Counter, ["zzz"])


def test_inv4_not_applicable_is_never_reported_as_pass(any_audit: TargetAudit) -> None:
    for v in any_audit.variants:
        inv4 = next(r for r in v.results if r.check is CheckId.INV_4)
        if inv4.not_applicable_runs == inv4.runs:
            assert inv4.status is CheckStatus.NOT_APPLICABLE
        assert v.kind in VariantKind
