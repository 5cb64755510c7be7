"""Interval calibration (small): the clustered interval covers, the naive one does not.

The full version with more settings and replications is `benchmarks/calibration.py`.
"""

from __future__ import annotations

import pytest

from analysis import AnalysisConfigError, CalibrationMethod, CalibrationSetup, run_calibration

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
