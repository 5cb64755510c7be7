"""Interval calibration: does a 95% interval cover the true rate 95% of the time?

Each replication draws a fresh set of tasks with success probabilities from a Beta
distribution (between-task heterogeneity), runs every task a few times, and builds intervals
for the overall rate. The task-clustered bootstrap should cover the true (population) rate
in about the nominal share of replications; an episode-level interval that treats repeated
episodes of one task as independent is too narrow and under-covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from analysis._bootstrap import (
    BootstrapConfig,
    NamedStatistic,
    Ratio,
    TaskMatrix,
    bca_bounds,
    percentile_bounds,
    resample_totals,
)
from analysis._errors import AnalysisConfigError
from analysis._intervals import wilson_interval
from analysis._metrics import effective_n


class CalibrationMethod(StrEnum):
    """The intervals whose coverage the calibration measures."""

    CLUSTERED_PERCENTILE = "clustered_percentile"
    CLUSTERED_BCA = "clustered_bca"
    EFFECTIVE_N_WILSON = "effective_n_wilson"
    NAIVE_EPISODE_BOOTSTRAP = "naive_episode_bootstrap"
    NAIVE_WILSON = "naive_wilson"

    @property
    def naive(self) -> bool:
        """True for the intervals that treat episodes as independent."""
        return self in (CalibrationMethod.NAIVE_EPISODE_BOOTSTRAP, CalibrationMethod.NAIVE_WILSON)


@dataclass(frozen=True)
class CalibrationSetup:
    """A simulation design: tasks, repetitions, heterogeneity and how many replications.

    Task probabilities are Beta(mean * c, (1 - mean) * c) with concentration ``c``; the
    intraclass correlation of repeated episodes is ``1 / (c + 1)``.
    """

    n_tasks: int = 40
    repetitions: int = 5
    mean_rate: float = 0.7
    concentration: float = 2.0
    replications: int = 200
    n_resamples: int = 1_000
    level: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_tasks < 2 or self.repetitions < 1 or self.replications < 1:
            raise AnalysisConfigError(
                "calibration needs n_tasks >= 2, repetitions >= 1 and replications >= 1"
            )
        if not 0.0 < self.mean_rate < 1.0 or self.concentration <= 0.0:
            raise AnalysisConfigError("calibration needs 0 < mean_rate < 1 and concentration > 0")

    @property
    def intraclass_correlation(self) -> float:
        """Correlation of two episodes of the same task."""
        return 1.0 / (self.concentration + 1.0)


@dataclass(frozen=True)
class CoverageEstimate:
    """How often one interval method covered the true rate."""

    method: CalibrationMethod
    covered: int
    replications: int
    mean_width: float

    @property
    def coverage(self) -> float:
        """Share of replications whose interval contained the true rate."""
        return self.covered / self.replications

    @property
    def monte_carlo_error(self) -> float:
        """Binomial standard error of :attr:`coverage`."""
        p = self.coverage
        return float(np.sqrt(p * (1.0 - p) / self.replications))


@dataclass(frozen=True)
class CalibrationResult:
    """Coverage of every method under one setup."""

    setup: CalibrationSetup
    estimates: tuple[CoverageEstimate, ...]

    def estimate(self, method: CalibrationMethod) -> CoverageEstimate:
        """The coverage estimate of one method."""
        for e in self.estimates:
            if e.method is method:
                return e
        raise AnalysisConfigError(f"no coverage estimate for {method}")  # pragma: no cover


_RATE = [NamedStatistic("rate", Ratio("s", "n"))]


def _bootstrap_bounds(
    matrix: TaskMatrix, config: BootstrapConfig, with_bca: bool
) -> tuple[tuple[float, float], tuple[float, float] | None]:
    totals = resample_totals(matrix, config)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = totals[:, 0] / totals[:, 1]
    full = matrix.values.sum(axis=0)
    estimate = float(full[0] / full[1])
    percentile = percentile_bounds(replicates, config.level)
    if not with_bca:
        return percentile, None
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (full[0] - matrix.values[:, 0]) / (full[1] - matrix.values[:, 1])
    bca = bca_bounds(replicates, estimate, jack, config.level)
    return percentile, (percentile if bca is None else bca)


def run_calibration(setup: CalibrationSetup = CalibrationSetup()) -> CalibrationResult:
    """Simulate ``setup.replications`` studies and count how often each interval covers.

    >>> result = run_calibration(CalibrationSetup(replications=20, n_resamples=200))
    >>> [e.replications for e in result.estimates]
    [20, 20, 20, 20, 20]
    """
    rng = np.random.default_rng(setup.seed)
    a = setup.mean_rate * setup.concentration
    b = (1.0 - setup.mean_rate) * setup.concentration
    truth = setup.mean_rate
    covered = dict.fromkeys(CalibrationMethod, 0)
    widths: dict[CalibrationMethod, list[float]] = {m: [] for m in CalibrationMethod}
    task_ids = tuple(f"t{i}" for i in range(setup.n_tasks))
    episode_ids = tuple(f"e{i}" for i in range(setup.n_tasks * setup.repetitions))
    for _ in range(setup.replications):
        probabilities = rng.beta(a, b, size=setup.n_tasks)
        outcomes = rng.random((setup.n_tasks, setup.repetitions)) < probabilities[:, None]
        successes = outcomes.sum(axis=1).astype(np.float64)
        trials = np.full(setup.n_tasks, float(setup.repetitions))
        config = BootstrapConfig(
            n_resamples=setup.n_resamples,
            seed=int(rng.integers(0, 2**63 - 1)),
            level=setup.level,
        )
        clustered = TaskMatrix(task_ids, ("s", "n"), np.column_stack([successes, trials]))
        flat = outcomes.ravel().astype(np.float64)
        episodes = TaskMatrix(episode_ids, ("s", "n"), np.column_stack([flat, np.ones_like(flat)]))
        (pct, bca) = _bootstrap_bounds(clustered, config, with_bca=True)
        (naive_pct, _) = _bootstrap_bounds(episodes, config, with_bca=False)
        k, n = float(successes.sum()), float(trials.sum())
        n_eff = effective_n(successes, trials)
        wilson_eff = wilson_interval(k / n * n_eff, n_eff, setup.level)
        wilson = wilson_interval(k, n, setup.level)
        intervals = {
            CalibrationMethod.CLUSTERED_PERCENTILE: pct,
            CalibrationMethod.CLUSTERED_BCA: bca if bca is not None else pct,
            CalibrationMethod.EFFECTIVE_N_WILSON: (wilson_eff.low, wilson_eff.high),
            CalibrationMethod.NAIVE_EPISODE_BOOTSTRAP: naive_pct,
            CalibrationMethod.NAIVE_WILSON: (wilson.low, wilson.high),
        }
        for method, (low, high) in intervals.items():
            covered[method] += int(low <= truth <= high)
            widths[method].append(high - low)
    return CalibrationResult(
        setup=setup,
        estimates=tuple(
            CoverageEstimate(
                method=m,
                covered=covered[m],
                replications=setup.replications,
                mean_width=float(np.mean(widths[m])),
            )
            for m in CalibrationMethod
        ),
    )
