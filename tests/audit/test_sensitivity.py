"""Oracle sensitivity of the v1 evaluator on core-v1: golden counts."""

from __future__ import annotations

import pytest

from cavbench.audit._sensitivity import (
    Invalidity,
    SensitivityRow,
    headline,
    sensitivity,
    sensitivity_summary,
)
from cavbench.audit.targets.v1 import V1Domain
from cavbench.scenarios import load_pack


@pytest.fixture(scope="module")
def rows() -> tuple[SensitivityRow, ...]:
    return sensitivity(V1Domain(load_pack("core-v1")))


def test_golden_caught_and_missed_counts(rows: tuple[SensitivityRow, ...]) -> None:
    got = {
        e["invalidity"]: (e["planted"], e["caught_v1"], e["right_reason_v1"], e["caught_v1_strict"])
        for e in sensitivity_summary(rows)
    }
    assert got == {
        "stale_commit": (11, 10, 10, 11),
        "duplicate_effect": (22, 22, 22, 22),
        "skipped_compensation": (2, 2, 2, 2),
        "widened_amount_or_scope": (10, 10, 0, 10),
        "other_tenant_resource": (1, 1, 0, 1),
        "false_success_claim": (7, 5, 5, 7),
    }


def test_v1_misses_a_stale_commit_where_temporal_validity_is_not_in_focus(
    rows: tuple[SensitivityRow, ...],
) -> None:
    missed = [r for r in rows if r.applicable and not r.caught[0]]
    stale = [r for r in missed if r.invalidity is Invalidity.STALE_COMMIT]
    assert [(r.scenario_id, r.temporal_in_focus, r.caught) for r in stale] == [
        ("ER-08", False, (False, True))
    ]
    false_claims = [r.scenario_id for r in missed if r.invalidity is Invalidity.FALSE_SUCCESS]
    assert false_claims == ["IA-05", "IA-06"]  # truthful reporting only under recovery


def test_strict_rule_leaves_the_headline_counts_unchanged() -> None:
    rows = {(h.profile, h.rule.value): h for h in headline(load_pack("core-v1"))}
    for profile, counts in {
        "direct": (37, 30, 10),
        "policy_gated": (40, 40, 20),
        "commit_guarded": (40, 40, 30),
        "reconciled": (40, 40, 35),
        "full_lifecycle": (40, 40, 40),
    }.items():
        for rule in ("v1", "v1_strict"):
            h = rows[(profile, rule)]
            assert (h.outcome, h.policy_aware, h.commit_valid) == counts
    # v1_strict adds findings (stale witnesses out of focus, overclaims where recovery is not
    # required) to episodes that already fail; no success flag moves.
    assert rows[("direct", "v1_strict")].verdicts_changed == 26
    assert rows[("policy_gated", "v1_strict")].verdicts_changed == 16
    assert rows[("direct", "v1_strict")].stale_flagged == 16
    assert rows[("direct", "v1")].stale_flagged == 10
