"""Paired contrasts: differences within task, McNemar, permutation, Holm."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from analysis import (
    AnalysisConfigError,
    BootstrapConfig,
    Metric,
    SyntheticTables,
    holm_adjust,
    mcnemar_exact,
    paired_contrasts,
    paired_permutation_p,
    simulate_episodes,
)

FAST = BootstrapConfig(n_resamples=2_000, seed=0)


def test_every_profile_against_direct_by_default(ablation: SyntheticTables) -> None:
    result = paired_contrasts(ablation.episodes, config=FAST)
    frame = result.frame
    assert frame["right"].unique().to_list() == ["direct"]
    assert frame["left"].to_list() == [
        "policy_gated",
        "commit_guarded",
        "reconciled",
        "full_lifecycle",
    ]
    # CVSR gains over direct are exactly the golden count differences, all one-sided.
    assert frame["left_higher"].to_list() == [10, 20, 25, 30]
    assert frame["right_higher"].to_list() == [0, 0, 0, 0]
    assert frame["difference"].to_list() == [0.25, 0.5, 0.625, 0.75]
    assert (frame["ci_low"] > 0).all()
    assert "not corrected for multiplicity" in result.note


def test_full_lifecycle_against_reconciled(ablation: SyntheticTables) -> None:
    result = paired_contrasts(
        ablation.episodes,
        pairs=[("full_lifecycle", "reconciled")],
        metrics=[Metric.CVSR, Metric.VG],
        config=FAST,
    )
    cvsr, vg = result.frame.rows(named=True)
    assert (cvsr["left_higher"], cvsr["right_higher"], cvsr["n_tasks"]) == (5, 0, 40)
    assert cvsr["mcnemar_p"] == 0.0625
    assert cvsr["permutation_p"] == 0.0625  # five differing tasks: the exact test
    assert vg["difference"] == -0.125
    assert (vg["left_higher"], vg["right_higher"]) == (0, 5)


def test_only_tasks_both_levels_ran_are_paired() -> None:
    episodes = simulate_episodes({"a": [1.0] * 10, "b": [0.0] * 10}, repetitions=1, seed=0)
    episodes = episodes.filter(
        ~((pl.col("profile") == "b") & pl.col("scenario_id").is_in(["task-00000", "task-00001"]))
    )
    frame = paired_contrasts(episodes, reference="b", config=FAST).frame
    assert frame["n_tasks"].item() == 8
    assert frame["left_higher"].item() == 8


def test_within_repeats_the_contrast_per_family(ablation: SyntheticTables) -> None:
    frame = paired_contrasts(
        ablation.episodes, pairs=[("reconciled", "commit_guarded")], within=["family"], config=FAST
    ).frame
    assert frame["family"].to_list() == [
        "execution_recovery",
        "intent_authority",
        "stable_happy_path",
        "state_mutation",
    ]
    assert frame["difference"].to_list() == [0.5, 0.0, 0.0, 0.0]
    assert frame["n_tasks"].to_list() == [10] * 4


def test_bad_levels_are_refused(ablation: SyntheticTables) -> None:
    with pytest.raises(AnalysisConfigError, match="reference 'oracle'"):
        paired_contrasts(ablation.episodes, reference="oracle", config=FAST)
    with pytest.raises(AnalysisConfigError, match="'nope' is not a level"):
        paired_contrasts(ablation.episodes, pairs=[("nope", "direct")], config=FAST)


@given(b=st.integers(0, 30), c=st.integers(0, 30))
def test_mcnemar_is_the_binomial_sign_test_on_discordant_pairs(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    assert mcnemar_exact(b, c) == pytest.approx(mcnemar_exact(c, b))


def test_permutation_p_is_exact_for_few_differing_tasks_and_seeded_otherwise() -> None:
    left = np.array([1.0] * 3 + [0.0] * 37)
    assert paired_permutation_p(left, np.zeros(40)) == 0.25
    assert paired_permutation_p(np.zeros(5), np.zeros(5)) == 1.0
    rng = np.random.default_rng(0)
    a, b = rng.random(30), rng.random(30)
    assert paired_permutation_p(a, b, seed=4) == paired_permutation_p(a, b, seed=4)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_is_monotone_bounded_and_at_least_the_raw_p(p_values: list[float]) -> None:
    adjusted = holm_adjust(p_values)
    assert all(
        raw <= adj + 1e-12 <= 1.0 + 1e-12 for raw, adj in zip(p_values, adjusted, strict=True)
    )
    order = np.argsort(p_values, kind="stable")
    ranked = [adjusted[i] for i in order]
    assert ranked == sorted(ranked)


def test_holm_known_values_and_missing_entries() -> None:
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == [0.03, 0.06, 0.06, 0.02]
    assert np.isnan(holm_adjust([0.01, float("nan")])[1])
