"""Interval calibration: does a 95% interval cover the true rate 95% of the time?

Each replication draws a fresh set of tasks with success probabilities from a Beta
distribution (between-task heterogeneity), runs every task a few times, and builds intervals
for the overall rate. The task-clustered bootstrap should cover the true (population) rate
in about the nominal share of replications; an episode-level interval that treats repeated
episodes of one task as independent is too narrow and under-covers.

:func:`run_paired_calibration` does the same for a paired contrast between two profiles that
share each task's difficulty: coverage of the paired-difference intervals and how often the
McNemar and permutation tests reject (their type-I error when there is no difference).
:func:`over_seeds` repeats either over several seeds and pools the counts, so the reported
coverage carries its Monte Carlo error and the spread between seeds is visible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from scipy import integrate
from scipy.special import expit, logit
from scipy.stats import beta as beta_distribution

from analysis._bootstrap import (
    BootstrapConfig,
    NamedStatistic,
    Ratio,
    RatioDifference,
    TaskMatrix,
    bca_bounds,
    cluster_robust_t_bounds,
    clustered_bootstrap,
    percentile_bounds,
    resample_totals,
)
from analysis._contrasts import mcnemar_exact, permutation_test_result
from analysis._errors import AnalysisConfigError
from analysis._intervals import wilson_interval
from analysis._metrics import effective_n
from analysis._vocab import IntervalMethod


class CalibrationMethod(StrEnum):
    """The intervals whose coverage the calibration measures."""

    CLUSTERED_PERCENTILE = "clustered_percentile"
    CLUSTERED_BCA = "clustered_bca"
    CLUSTER_ROBUST_T = "cluster_robust_t"
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
    effect: float = 0.0
    """Paired calibration only: the second profile's shift on the logit scale (0: none)."""
    permutation_resamples: int = 999
    """Paired calibration only: Monte Carlo sign flips when the exact test does not apply."""

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
    [20, 20, 20, 20, 20, 20]
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
        t_low, t_high, _ = cluster_robust_t_bounds(clustered, _RATE, setup.level)
        (naive_pct, _) = _bootstrap_bounds(episodes, config, with_bca=False)
        k, n = float(successes.sum()), float(trials.sum())
        n_eff = effective_n(successes, trials)
        wilson_eff = wilson_interval(k / n * n_eff, n_eff, setup.level)
        wilson = wilson_interval(k, n, setup.level)
        intervals = {
            CalibrationMethod.CLUSTERED_PERCENTILE: pct,
            CalibrationMethod.CLUSTERED_BCA: bca if bca is not None else pct,
            CalibrationMethod.CLUSTER_ROBUST_T: (float(t_low[0]), float(t_high[0])),
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


class PairedMethod(StrEnum):
    """The paired-difference intervals whose coverage the paired calibration measures."""

    CLUSTERED_PERCENTILE = "clustered_percentile"
    CLUSTERED_BCA = "clustered_bca"
    CLUSTER_ROBUST_T = "cluster_robust_t"


class PairedTest(StrEnum):
    """The paired tests whose rejection rate the paired calibration measures."""

    MCNEMAR = "mcnemar"
    PERMUTATION = "permutation"


@dataclass(frozen=True)
class RejectionEstimate:
    """How often one test rejected at ``alpha`` (the type-I error when there is no effect)."""

    test: PairedTest
    rejected: int
    replications: int
    alpha: float

    @property
    def rate(self) -> float:
        """Share of replications in which the test rejected."""
        return self.rejected / self.replications

    @property
    def monte_carlo_error(self) -> float:
        """Binomial standard error of :attr:`rate`."""
        p = self.rate
        return float(np.sqrt(p * (1.0 - p) / self.replications))


@dataclass(frozen=True)
class PairedCalibrationResult:
    """Coverage of each paired-difference interval and rejection rate of each test."""

    setup: CalibrationSetup
    true_difference: float
    coverage: tuple[CoverageEstimate, ...]
    """One per :class:`PairedMethod`; ``method`` holds the matching :class:`CalibrationMethod`."""
    rejections: tuple[RejectionEstimate, ...]

    def estimate(self, method: PairedMethod) -> CoverageEstimate:
        """The coverage estimate of one interval method."""
        return next(e for e in self.coverage if e.method.value == method.value)

    def rejection(self, test: PairedTest) -> RejectionEstimate:
        """The rejection estimate of one test."""
        return next(r for r in self.rejections if r.test is test)


def true_paired_difference(setup: CalibrationSetup) -> float:
    """Population difference E[p_shifted] - E[p] when p ~ Beta and the shift is on the logit scale.

    >>> true_paired_difference(CalibrationSetup(effect=0.0))
    0.0
    """
    if setup.effect == 0.0:
        return 0.0
    a = setup.mean_rate * setup.concentration
    b = (1.0 - setup.mean_rate) * setup.concentration
    density = beta_distribution(a, b).pdf

    def shifted(p: float) -> float:
        return float(expit(logit(p) + setup.effect) * density(p))

    value, _ = integrate.quad(shifted, 0.0, 1.0, limit=200)
    return float(value) - setup.mean_rate


_PAIRED = [
    NamedStatistic("diff", RatioDifference(Ratio("sl", "nl"), Ratio("sr", "nr"))),
]


def run_paired_calibration(setup: CalibrationSetup = CalibrationSetup()) -> PairedCalibrationResult:
    """Simulate paired studies and count interval coverage and test rejections.

    Each replication draws task probabilities ``p_i`` from the Beta distribution; the reference
    profile succeeds with ``p_i`` and the other with ``expit(logit(p_i) + effect)``, so the two
    share each task's difficulty (the pairing the contrasts exploit). Both run every task
    ``repetitions`` times. With ``effect = 0`` the rejection rates are type-I errors.

    >>> result = run_paired_calibration(CalibrationSetup(n_tasks=10, replications=20, n_resamples=200))
    >>> [e.replications for e in result.coverage], [r.replications for r in result.rejections]
    ([20, 20, 20], [20, 20])
    """
    rng = np.random.default_rng(setup.seed)
    a = setup.mean_rate * setup.concentration
    b = (1.0 - setup.mean_rate) * setup.concentration
    truth = true_paired_difference(setup)
    alpha = 1.0 - setup.level
    covered = dict.fromkeys(PairedMethod, 0)
    widths: dict[PairedMethod, list[float]] = {m: [] for m in PairedMethod}
    rejected = dict.fromkeys(PairedTest, 0)
    task_ids = tuple(f"t{i}" for i in range(setup.n_tasks))
    reps = setup.repetitions
    trials = np.full(setup.n_tasks, float(reps))
    for _ in range(setup.replications):
        p_right = rng.beta(a, b, size=setup.n_tasks)
        p_left = expit(logit(p_right) + setup.effect) if setup.effect else p_right
        left = (rng.random((setup.n_tasks, reps)) < p_left[:, None]).sum(axis=1).astype(float)
        right = (rng.random((setup.n_tasks, reps)) < p_right[:, None]).sum(axis=1).astype(float)
        seed = int(rng.integers(0, 2**63 - 1))
        matrix = TaskMatrix(
            task_ids, ("sl", "nl", "sr", "nr"), np.column_stack([left, trials, right, trials])
        )
        bounds: dict[PairedMethod, tuple[float, float]] = {}
        for method, interval in (
            (PairedMethod.CLUSTERED_PERCENTILE, IntervalMethod.PERCENTILE),
            (PairedMethod.CLUSTERED_BCA, IntervalMethod.BCA),
        ):
            config = BootstrapConfig(
                n_resamples=setup.n_resamples, seed=seed, level=setup.level, method=interval
            )
            boot = clustered_bootstrap(matrix, _PAIRED, config)
            bounds[method] = (float(boot.low[0]), float(boot.high[0]))
        t_low, t_high, _ = cluster_robust_t_bounds(matrix, _PAIRED, setup.level)
        bounds[PairedMethod.CLUSTER_ROBUST_T] = (float(t_low[0]), float(t_high[0]))
        for method, (low, high) in bounds.items():
            covered[method] += int(low <= truth <= high)
            widths[method].append(high - low)
        rate_left, rate_right = left / reps, right / reps
        p_values = {
            PairedTest.MCNEMAR: mcnemar_exact(
                int(np.count_nonzero(rate_left > rate_right)),
                int(np.count_nonzero(rate_right > rate_left)),
            ),
            PairedTest.PERMUTATION: permutation_test_result(
                rate_left, rate_right, n_resamples=setup.permutation_resamples, seed=seed % 2**32
            ).p_value,
        }
        for test, p in p_values.items():
            rejected[test] += int(p <= alpha)
    return PairedCalibrationResult(
        setup=setup,
        true_difference=truth,
        coverage=tuple(
            CoverageEstimate(
                method=CalibrationMethod(m.value),
                covered=covered[m],
                replications=setup.replications,
                mean_width=float(np.mean(widths[m])),
            )
            for m in PairedMethod
        ),
        rejections=tuple(
            RejectionEstimate(t, rejected[t], setup.replications, alpha) for t in PairedTest
        ),
    )


@dataclass(frozen=True)
class PooledEstimate:
    """Coverage (or a rejection rate) pooled over seeds, with its Monte Carlo error."""

    name: str
    per_seed: tuple[float, ...]
    hits: int
    replications: int

    @property
    def value(self) -> float:
        """Pooled share over every replication of every seed."""
        return self.hits / self.replications

    @property
    def monte_carlo_error(self) -> float:
        """Binomial standard error of the pooled share."""
        p = self.value
        return float(np.sqrt(p * (1.0 - p) / self.replications))


def over_seeds(
    run: Callable[[CalibrationSetup], CalibrationResult | PairedCalibrationResult],
    setup: CalibrationSetup,
    seeds: Sequence[int],
) -> tuple[PooledEstimate, ...]:
    """Run a calibration once per seed and pool each method's (and test's) counts.

    >>> pooled = over_seeds(run_calibration, CalibrationSetup(replications=10, n_resamples=100),
    ...                     seeds=[0, 1])
    >>> pooled[0].name, pooled[0].replications, len(pooled[0].per_seed)
    ('clustered_percentile', 20, 2)
    """
    if not seeds:
        raise AnalysisConfigError("over_seeds needs at least one seed")
    counts: dict[str, list[tuple[int, int]]] = {}
    for seed in seeds:
        result = run(replace(setup, seed=seed))
        estimates = result.estimates if isinstance(result, CalibrationResult) else result.coverage
        for e in estimates:
            counts.setdefault(str(e.method), []).append((e.covered, e.replications))
        if isinstance(result, PairedCalibrationResult):
            for r in result.rejections:
                counts.setdefault(f"{r.test}_rejects", []).append((r.rejected, r.replications))
    return tuple(
        PooledEstimate(
            name=name,
            per_seed=tuple(hit / total for hit, total in pairs),
            hits=sum(hit for hit, _ in pairs),
            replications=sum(total for _, total in pairs),
        )
        for name, pairs in counts.items()
    )
