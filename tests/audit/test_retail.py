"""The retail target: the shipped defective reward and the repaired one."""

from __future__ import annotations

from cavbench.audit import CheckId, CheckStatus, TargetAudit, VariantKind, load_target
from cavbench.audit.targets.retail import TASKS, RetailDomain


def test_defective_oracle_fails_the_four_state_invariants_and_passes_the_controls(
    retail_audit: TargetAudit,
) -> None:
    defective = next(v for v in retail_audit.variants if v.kind is VariantKind.NATIVE_DEFECT)
    status = {r.check: r.status for r in defective.results}
    assert {c for c, s in status.items() if s is CheckStatus.FAIL} == {
        CheckId.INV_1,
        CheckId.INV_2,
        CheckId.INV_4,
        CheckId.INV_5,
    }
    for check in (CheckId.INV_3, CheckId.CTL_1, CheckId.CTL_2, CheckId.CTL_3):
        assert status[check] is CheckStatus.PASS


def test_defective_first_verdict_is_right_and_the_second_is_inflated() -> None:
    spec = load_target("retail")
    defective = spec.natives[0].factory()
    defective.reset("retail-001")
    first, second = defective.score(), defective.score()
    assert not first.passed
    assert second.passed  # the live world now holds the reference state
    repaired = spec.correct()
    repaired.reset("retail-001")
    assert not repaired.score().passed
    assert not repaired.score().passed


def test_tasks_are_a_few_dozen_with_references() -> None:
    assert len(TASKS) == 35
    assert all(t.actions for t in TASKS)
    domain = RetailDomain()
    assert domain.tasks() == tuple(t.task_id for t in TASKS)
    assert sum(bool(t.outputs) for t in TASKS) == 6


def test_retail_world_digest_matches_a_fresh_computation() -> None:
    """The incremental digest must equal the digest of a world built from scratch."""
    domain = RetailDomain()
    for task in domain.tasks()[:10]:
        live = domain.new_world(task)
        for action in domain.reference(task):
            live.apply(action)
        rebuilt = domain.new_world(task)
        rebuilt._db = live.state()
        rebuilt._digests = {}
        assert live.digest().world == rebuilt.digest().world
