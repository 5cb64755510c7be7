"""Headline rates from verdicts (SPEC d.4): integer counts, exact gaps, per-family split."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cavbench.evaluation import DimensionStatus, RateCounts, ScoringRule, Verdict, summarize
from cavbench.scenarios import Family

FAMILIES = list(Family)


def verdict(family: Family, outcome: bool, policy: bool, valid: bool) -> Verdict:
    return Verdict(
        scenario_id="S",
        family=family,
        rule=ScoringRule.V1,
        outcome_success=outcome,
        policy_aware_outcome_success=outcome and policy,
        commit_valid_success=outcome and policy and valid,
        dimensions={},
        findings=(),
        failure_codes=(),
        commit_count=0,
    )


flag_rows = st.lists(
    st.tuples(st.sampled_from(FAMILIES), st.booleans(), st.booleans(), st.booleans()), max_size=30
)


@given(rows=flag_rows)
def test_counts_and_rates(rows: list[tuple[Family, bool, bool, bool]]) -> None:
    verdicts = [verdict(*row) for row in rows]
    metrics = summarize(verdicts)
    overall = metrics.overall
    n = len(verdicts)
    k_o = sum(v.outcome_success for v in verdicts)
    k_p = sum(v.policy_aware_outcome_success for v in verdicts)
    k_c = sum(v.commit_valid_success for v in verdicts)
    assert (overall.n, overall.outcome, overall.policy_aware, overall.commit_valid) == (
        n,
        k_o,
        k_p,
        k_c,
    )
    if n == 0:
        assert (overall.osr, overall.paosr, overall.cvsr, overall.vg, overall.pavg) == (
            0,
            0,
            0,
            0,
            0,
        )
    else:
        assert overall.osr == k_o / n
        assert overall.vg == float(Fraction(k_o - k_c, n))
        assert overall.pavg == float(Fraction(k_p - k_c, n))
    assert list(metrics.by_family) == sorted({row[0] for row in rows})
    assert sum(c.n for c in metrics.by_family.values()) == n
    for family, counts in metrics.by_family.items():
        mine = [v for v in verdicts if v.family is family]
        assert counts.commit_valid == sum(v.commit_valid_success for v in mine)


def test_gap_is_exact_where_float_subtraction_is_not() -> None:
    counts = RateCounts(n=10, outcome=7, policy_aware=7, commit_valid=4)
    assert counts.osr - counts.cvsr != 0.3  # 0.7 - 0.4 in floats
    assert counts.vg == 0.3


def test_serialised_rates_round_to_four_decimals() -> None:
    counts = RateCounts(n=3, outcome=3, policy_aware=2, commit_valid=1)
    assert counts.as_json() == {
        "n": 3,
        "OSR": 1.0,
        "PAOSR": 0.6667,
        "CVSR": 0.3333,
        "VG": 0.6667,
        "PAVG": 0.3333,
    }
    assert counts.line() == "OSR=1.000 PAOSR=0.667 CVSR=0.333 VG=0.667"


def test_dimension_status_vocabulary() -> None:
    assert [s.value for s in DimensionStatus] == ["pass", "fail", "not_applicable"]


def test_summarize_real_episodes(kit: Any) -> None:
    scenario = kit.scenario(goal=[kit.pred("exists", "state.order.O-1")])
    runs = [kit.episode(scenario, p).verdict for p in ("direct", "full_lifecycle")]
    metrics = summarize(runs)
    assert (metrics.overall.n, metrics.overall.commit_valid) == (2, 2)
    assert list(metrics.by_family) == [Family.STATE_MUTATION]
