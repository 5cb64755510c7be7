"""Headline metrics: golden counts, intervals, effective n, grouping and input checks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from analysis import (
    GOLDEN_ABLATION_COUNTS,
    BootstrapConfig,
    MixedInputError,
    SmallNMethod,
    SyntheticTables,
    TableSchemaError,
    check_single_valued,
    effective_n,
    headline_metrics,
    headline_table,
    rate_counts,
)

FAST = BootstrapConfig(n_resamples=2_000, seed=0)
# SPEC d.6: CVSR per family (ER / IA / HP / ST) out of 10 scenarios each.
GOLDEN_CVSR_BY_FAMILY = {
    "direct": (0, 0, 10, 0),
    "policy_gated": (0, 10, 10, 0),
    "commit_guarded": (0, 10, 10, 10),
    "reconciled": (5, 10, 10, 10),
    "full_lifecycle": (10, 10, 10, 10),
}
FAMILIES = ("execution_recovery", "intent_authority", "stable_happy_path", "state_mutation")


def test_rate_counts_reproduce_the_golden_ablation(ablation: SyntheticTables) -> None:
    counts = rate_counts(ablation.episodes)
    expected = pl.DataFrame(
        {
            "profile": list(GOLDEN_ABLATION_COUNTS),
            "n": [40] * 5,
            "n_tasks": [40] * 5,
            "OSR_k": [c[0] for c in GOLDEN_ABLATION_COUNTS.values()],
            "PAOSR_k": [c[1] for c in GOLDEN_ABLATION_COUNTS.values()],
            "CVSR_k": [c[2] for c in GOLDEN_ABLATION_COUNTS.values()],
        }
    )
    assert_frame_equal(counts, expected)


def test_headline_counts_and_gaps_are_golden_integers(ablation: SyntheticTables) -> None:
    frame = headline_metrics(ablation.episodes, config=FAST).frame
    got = {(r["profile"], r["metric"]): (r["k"], r["n"]) for r in frame.iter_rows(named=True)}
    for profile, (osr, paosr, cvsr) in GOLDEN_ABLATION_COUNTS.items():
        assert got[(profile, "OSR")] == (osr, 40)
        assert got[(profile, "PAOSR")] == (paosr, 40)
        assert got[(profile, "CVSR")] == (cvsr, 40)
        assert got[(profile, "VG")] == (osr - cvsr, 40)
        assert got[(profile, "PAVG")] == (paosr - cvsr, 40)
    vg = frame.filter(pl.col("metric") == "VG")
    assert dict(zip(vg["profile"], vg["k"], strict=True)) == {
        "direct": 27,
        "policy_gated": 20,
        "commit_guarded": 10,
        "reconciled": 5,
        "full_lifecycle": 0,
    }


def test_rows_come_in_canonical_profile_and_metric_order(ablation: SyntheticTables) -> None:
    shuffled = ablation.episodes.sample(fraction=1.0, shuffle=True, seed=3)
    frame = headline_metrics(shuffled, config=FAST).frame
    assert frame["profile"].unique(maintain_order=True).to_list() == list(GOLDEN_ABLATION_COUNTS)
    assert frame["metric"][:5].to_list() == ["OSR", "PAOSR", "CVSR", "VG", "PAVG"]
    # Row order of the input does not change any number (tasks are sorted before drawing).
    assert_frame_equal(frame, headline_metrics(ablation.episodes, config=FAST).frame)


def test_every_interval_contains_its_estimate(ablation_repeated: SyntheticTables) -> None:
    frame = headline_metrics(ablation_repeated.episodes, config=FAST).frame
    assert (frame["ci_low"] <= frame["estimate"]).all()
    assert (frame["estimate"] <= frame["ci_high"]).all()
    rates = frame.filter(pl.col("small_n_low").is_not_null())
    assert (rates["small_n_low"] <= rates["estimate"]).all()
    assert (rates["estimate"] <= rates["small_n_high"]).all()


def test_a_perfect_rate_gets_a_collapsed_bootstrap_and_an_informative_wilson(
    ablation: SyntheticTables,
) -> None:
    frame = headline_metrics(ablation.episodes, config=FAST).frame
    row = frame.filter((pl.col("profile") == "full_lifecycle") & (pl.col("metric") == "CVSR"))
    assert (row["ci_low"].item(), row["ci_high"].item()) == (1.0, 1.0)
    assert row["small_n_high"].item() == 1.0
    assert round(row["small_n_low"].item(), 3) == 0.912
    jeffreys = headline_metrics(ablation.episodes, config=FAST, small_n=SmallNMethod.JEFFREYS)
    j_row = jeffreys.frame.filter(
        (pl.col("profile") == "full_lifecycle") & (pl.col("metric") == "CVSR")
    )
    assert round(j_row["small_n_low"].item(), 3) == 0.940


def test_repeats_of_a_deterministic_outcome_add_no_information(
    ablation: SyntheticTables, ablation_repeated: SyntheticTables
) -> None:
    """Six identical episodes per scenario: same rates, intervals and effective n as one."""
    once = headline_metrics(ablation.episodes, config=FAST).frame
    six = headline_metrics(ablation_repeated.episodes, config=FAST).frame
    columns = ["estimate", "ci_low", "ci_high", "small_n_low", "small_n_high", "n_effective"]
    assert_frame_equal(once.select(columns), six.select(columns))
    assert six["n"].unique().to_list() == [240]


def test_effective_n_between_tasks_and_episodes() -> None:
    rng = np.random.default_rng(0)
    trials = np.full(30, 5.0)
    independent = rng.binomial(5, 0.6, 30).astype(float)
    clustered = 5.0 * rng.binomial(1, 0.6, 30)
    assert effective_n(clustered, trials) == pytest.approx(30.0)
    assert 30.0 <= effective_n(independent, trials) <= 150.0
    assert effective_n(np.zeros(3), np.zeros(3)) == 0.0


def test_groups_by_family_and_reproduces_spec_family_counts(ablation: SyntheticTables) -> None:
    frame = headline_metrics(ablation.episodes, ("profile", "family"), FAST).frame
    cvsr = frame.filter(pl.col("metric") == "CVSR")
    for profile, expected in GOLDEN_CVSR_BY_FAMILY.items():
        part = cvsr.filter(pl.col("profile") == profile)
        assert part["family"].to_list() == list(FAMILIES)
        assert tuple(part["k"].to_list()) == expected
        assert part["n"].to_list() == [10] * 4
    direct_osr = frame.filter((pl.col("profile") == "direct") & (pl.col("metric") == "OSR"))
    assert direct_osr["k"].to_list() == [10, 7, 10, 10]


def test_stratified_family_resamples_keep_ten_scenarios_per_family(
    ablation: SyntheticTables,
) -> None:
    config = BootstrapConfig(n_resamples=2_000, stratify_by="family")
    result = headline_metrics(ablation.episodes, ("profile", "family"), config)
    # Each family keeps its 10 scenarios in every resample, so every resampled per-family
    # rate is a multiple of 1/10; unstratified, a family may draw 7 or 13 scenarios.
    tenths = result.bootstrap.replicates * 10
    assert np.allclose(tenths, np.round(tenths))
    loose = headline_metrics(ablation.episodes, ("profile", "family"), FAST).bootstrap
    loose_tenths = loose.replicates[np.isfinite(loose.replicates)] * 10
    assert not np.allclose(loose_tenths, np.round(loose_tenths))


def test_crashed_episodes_are_counted(ablation: SyntheticTables) -> None:
    episodes = ablation.episodes.with_columns(
        pl.when(pl.col("scenario_id") == "ER-01")
        .then(pl.lit("Traceback ..."))
        .otherwise(None)
        .alias("error")
    )
    frame = headline_metrics(episodes, config=FAST).frame
    assert frame["n_errors"].unique().to_list() == [1]
    notes = headline_table(frame, FAST).notes
    assert "5 episode(s) ended with an adapter error; they count as failures." in notes


def test_missing_or_mistyped_columns_name_the_column(ablation: SyntheticTables) -> None:
    with pytest.raises(TableSchemaError, match="'commit_valid_success': missing"):
        headline_metrics(ablation.episodes.drop("commit_valid_success"))
    with pytest.raises(TableSchemaError, match="expected boolean"):
        headline_metrics(ablation.episodes.with_columns(pl.col("outcome_success").cast(pl.Int8)))
    with pytest.raises(TableSchemaError, match="null values"):
        headline_metrics(
            ablation.episodes.with_columns(
                pl.when(pl.col("scenario_id") == "ER-01")
                .then(None)
                .otherwise(pl.col("outcome_success"))
                .alias("outcome_success")
            )
        )
    with pytest.raises(TableSchemaError, match="cannot group by a missing column"):
        headline_metrics(ablation.episodes, ("profile", "temperature"))


def test_pooling_two_scoring_rules_is_refused(ablation: SyntheticTables) -> None:
    mixed = pl.concat(
        [
            ablation.episodes,
            ablation.episodes.with_columns(pl.lit("v1_strict").alias("scoring_rule")),
        ]
    ).with_columns((pl.col("episode_id") + pl.col("scoring_rule")).alias("episode_id"))
    with pytest.raises(MixedInputError, match="--group-by profile,scoring_rule"):
        check_single_valued(mixed, ["scoring_rule"], ["profile"])
    check_single_valued(mixed, ["scoring_rule"], ["profile", "scoring_rule"])


def test_effective_n_on_one_task_claims_one_unit_whatever_the_successes() -> None:
    # One task: the between-task variance cannot be estimated, 1/5 and 0/5 alike give 1.
    assert effective_n(np.array([1.0]), np.array([5.0])) == 1.0
    assert effective_n(np.array([0.0]), np.array([5.0])) == 1.0


def test_effective_n_uses_the_cluster_robust_variance_with_its_t_over_t_minus_1_factor() -> None:
    # Four tasks x 5 repetitions, 4, 1, 3, 2 successes: p = 0.5, n = 20.
    s, m = np.array([4.0, 1.0, 3.0, 2.0]), np.array([5.0] * 4)
    residuals = float(np.sum((s - 0.5 * m) ** 2))  # 2.25 + 2.25 + 0.25 + 0.25 = 5
    clustered = 4 / 3 * residuals / 20**2
    expected = 20 * (0.25 / 20) / clustered  # n / deff = 0.25 * 400 / (4/3 * 5) = 15
    assert expected == pytest.approx(15.0)
    assert effective_n(s, m) == pytest.approx(expected)


def test_cluster_t_option_reports_its_method_and_widens_with_few_tasks(
    ablation: SyntheticTables,
) -> None:
    from analysis import IntervalMethod

    config = BootstrapConfig(n_resamples=500, method=IntervalMethod.CLUSTER_T)
    frame = headline_metrics(ablation.episodes, config=config).frame
    direct_cvsr = frame.filter((pl.col("profile") == "direct") & (pl.col("metric") == "CVSR"))
    row = direct_cvsr.row(0, named=True)
    assert row["ci_method"] == "cluster_t"
    # 10/40 over 40 single-episode tasks: 0.25 +/- t(39) * sqrt(40/39 * 40 * .25 * .75) / 40.
    se = (40 / 39 * 40 * 0.25 * 0.75) ** 0.5 / 40
    half = 2.0226909200367604 * se
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.25 - half, 0.25 + half), rel=1e-9)
