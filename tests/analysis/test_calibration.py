"""Interval calibration (small): the clustered interval covers, the naive one does not.

The full version with more settings and replications is `benchmarks/calibration.py`.
"""

from __future__ import annotations

import pytest

from analysis import AnalysisConfigError, CalibrationMethod, CalibrationSetup, run_calibration
from analysis._calibration import (
    PairedMethod,
    PairedTest,
    over_seeds,
    run_paired_calibration,
    true_paired_difference,
)

NOMINAL = 0.95
TOLERANCE = 0.04
"""About three Monte Carlo standard errors at 300 replications (sqrt(.95 * .05 / 300) = .013)."""
NAIVE_SHORTFALL = 0.08


def test_clustered_interval_covers_and_naive_episode_interval_under_covers() -> None:
    setup = CalibrationSetup(
        n_tasks=40,
        repetitions=5,
        mean_rate=0.7,
        concentration=2.0,
        replications=300,
        n_resamples=500,
        seed=0,
    )
    result = run_calibration(setup)
    clustered = [result.estimate(m) for m in CalibrationMethod if not m.naive]
    naive = [result.estimate(m) for m in CalibrationMethod if m.naive]
    for estimate in clustered:
        assert abs(estimate.coverage - NOMINAL) <= TOLERANCE, estimate
    for estimate in naive:
        assert estimate.coverage <= NOMINAL - NAIVE_SHORTFALL, estimate
        assert estimate.mean_width < min(e.mean_width for e in clustered)


def test_with_one_episode_per_task_the_naive_interval_is_fine() -> None:
    result = run_calibration(CalibrationSetup(repetitions=1, replications=200, n_resamples=400))
    naive = result.estimate(CalibrationMethod.NAIVE_WILSON)
    assert abs(naive.coverage - NOMINAL) <= TOLERANCE


def test_bad_setups_are_refused() -> None:
    with pytest.raises(AnalysisConfigError):
        CalibrationSetup(n_tasks=1)
    with pytest.raises(AnalysisConfigError):
        CalibrationSetup(mean_rate=1.0)


def test_paired_contrasts_hold_their_level_and_cover_the_true_difference() -> None:
    # Small and fast: 10 tasks x 5 repetitions, no difference between the profiles.
    setup = CalibrationSetup(n_tasks=10, repetitions=5, replications=150, n_resamples=300)
    result = run_paired_calibration(setup)
    assert result.true_difference == 0.0
    for test in PairedTest:
        rejection = result.rejection(test)
        assert rejection.rate <= 0.05 + 3 * 0.018, rejection  # exact tests: at most alpha
    t = result.estimate(PairedMethod.CLUSTER_ROBUST_T)
    assert abs(t.coverage - NOMINAL) <= 0.06, t


def test_true_paired_difference_integrates_the_logit_shift() -> None:
    # mean rate 0.5, concentration 2: p ~ Beta(1, 1); E[expit(logit p + 1)] by quadrature.
    from scipy import integrate
    from scipy.special import expit, logit

    expected = integrate.quad(lambda p: expit(logit(p) + 1.0), 0.0, 1.0)[0] - 0.5
    setup = CalibrationSetup(mean_rate=0.5, concentration=2.0, effect=1.0)
    assert true_paired_difference(setup) == pytest.approx(expected, abs=1e-9)


def test_coverage_over_seeds_pools_the_counts() -> None:
    pooled = over_seeds(
        run_calibration,
        CalibrationSetup(n_tasks=10, replications=25, n_resamples=100),
        [0, 1, 2, 3],
    )
    first = pooled[0]
    assert first.replications == 100
    assert len(first.per_seed) == 4
    assert first.value == pytest.approx(sum(first.per_seed) / 4)
    assert first.monte_carlo_error == pytest.approx((first.value * (1 - first.value) / 100) ** 0.5)


@pytest.mark.slow
def test_clustered_coverage_at_ten_tasks_over_four_seeds() -> None:
    setup = CalibrationSetup(n_tasks=10, repetitions=5, replications=500, n_resamples=1_000)
    pooled = {p.name: p for p in over_seeds(run_calibration, setup, [0, 1, 2, 3])}
    assert abs(pooled["cluster_robust_t"].value - NOMINAL) <= 0.03
