"""Paired contrasts: differences within task, McNemar, permutation, Holm."""

from __future__ import annotations

from collections.abc import Callable

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
    headline_metrics,
    holm_adjust,
    mcnemar_exact,
    paired_contrasts,
    paired_permutation_p,
    pass_hat_k,
    permutation_test_result,
    simulate_episodes,
)
from analysis._contrasts import PermutationMethod
from analysis._errors import TableSchemaError

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


def _one_discordant_task(n_tasks: int) -> pl.DataFrame:
    """Two profiles that agree on every scenario but the first."""
    left = [1.0] + [0.0] * (n_tasks - 1)
    return simulate_episodes({"direct": [0.0] * n_tasks, "policy_gated": left}, 1, seed=0)


@pytest.mark.parametrize("n_tasks", [1, 3, 40])
def test_exactly_one_discordant_task_gives_p_one_without_crashing(n_tasks: int) -> None:
    frame = paired_contrasts(_one_discordant_task(n_tasks), config=FAST).frame
    row = frame.row(0, named=True)
    assert (row["left_higher"], row["right_higher"]) == (1, 0)
    assert row["mcnemar_p"] == 1.0
    assert row["permutation_p"] == 1.0
    assert row["permutation_method"] == "exact"


def test_permutation_is_exact_by_convolution_and_agrees_with_scipy_enumeration() -> None:
    # 16 differing tasks with rates over 5 repetitions: scipy enumerates all 2**16 flips.
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    left = rng.integers(0, 6, 16) / 5
    right = np.where(left == 0.4, 0.6, rng.integers(0, 6, 16) / 5)
    differs = left != right
    exact = permutation_test(
        (left[differs], right[differs]),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=2**20,
        vectorized=True,
    ).pvalue
    result = permutation_test_result(left, right)
    assert result.method is PermutationMethod.EXACT
    assert result.floor is None
    assert result.p_value == pytest.approx(exact, rel=1e-9)


def test_permutation_p_is_never_zero_and_reports_its_floor_when_random() -> None:
    # 30 one-sided discordant tasks: exact p = 2 * 2**-30, not the 1/(B+1) floor, never 0.
    exact = permutation_test_result(np.array([1.0] * 30 + [0.0] * 10), np.zeros(40))
    assert exact.p_value == 2.0**-29
    rng = np.random.default_rng(0)
    random = permutation_test_result(rng.random(30), rng.random(30), n_resamples=999)
    assert random.method is PermutationMethod.MONTE_CARLO
    assert random.floor == 1 / 1000
    assert random.p_value >= random.floor


def test_small_p_values_survive_in_the_contrasts_frame(ablation: SyntheticTables) -> None:
    frame = paired_contrasts(ablation.episodes, config=FAST).frame
    # full_lifecycle - direct: 30 of 30 discordant tasks favour full_lifecycle.
    row = frame.filter(pl.col("left") == "full_lifecycle").row(0, named=True)
    assert row["mcnemar_p"] == pytest.approx(2.0**-29)
    assert row["permutation_p"] == pytest.approx(2.0**-29)
    assert (frame["mcnemar_p"] > 0).all()
    assert (frame["permutation_p_holm"] > 0).all()


def test_contrasts_without_a_shared_task_leave_the_holm_family() -> None:
    episodes = pl.concat(
        [
            simulate_episodes({"direct": [1.0] * 4, "reconciled": [0.0] * 4}, 1, seed=0),
            simulate_episodes({"policy_gated": [1.0] * 4}, 1, seed=0).with_columns(
                pl.col("scenario_id").str.replace("task", "other")
            ),
        ]
    )
    result = paired_contrasts(episodes, config=FAST)
    frame = result.frame
    lonely = frame.filter(pl.col("left") == "policy_gated").row(0, named=True)
    assert lonely["n_tasks"] == 0
    assert lonely["excluded"] == "no scenario run by both policy_gated and direct"
    assert (lonely["difference"], lonely["mcnemar_p"], lonely["mcnemar_p_holm"]) == (None,) * 3
    tested = frame.filter(pl.col("left") == "reconciled").row(0, named=True)
    # A family of one: Holm leaves the p-value as it is (it would double with two members).
    assert tested["mcnemar_p_holm"] == tested["mcnemar_p"] == 0.125
    assert "left out of the Holm family" in result.note


def _null_at_row_3(column: str) -> Callable[[pl.DataFrame], pl.DataFrame]:
    return lambda frame: frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col(column)).alias(column)
    )


@pytest.mark.parametrize(
    ("spoil", "column"),
    [
        (lambda frame: frame.head(0), "scenario_id"),
        (_null_at_row_3("scenario_id"), "scenario_id"),
        (_null_at_row_3("profile"), "profile"),
    ],
    ids=["empty", "null scenario_id", "null profile"],
)
def test_bad_frames_raise_one_typed_error_naming_the_column(
    ablation: SyntheticTables, spoil: Callable[[pl.DataFrame], pl.DataFrame], column: str
) -> None:
    frame = spoil(ablation.episodes)
    for function in (headline_metrics, pass_hat_k, paired_contrasts):
        with pytest.raises(TableSchemaError) as caught:
            function(frame, config=FAST)
        assert caught.value.column == column


def test_holm_equals_statsmodels_multipletests() -> None:
    """`holm_adjust` writes Holm out (statsmodels collects garbage on every call): same values."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    # Two calls only (each collects garbage): ties, 0 and 1; random values, some clipping at 1.
    families = [np.array([0.01, 0.01, 0.04, 0.6, 0.6, 1.0, 0.0]), rng.random(40) / 5]
    for p in families:
        expected = [round(float(v), 15) for v in multipletests(p, method="holm")[1]]
        assert holm_adjust(list(p)) == expected
