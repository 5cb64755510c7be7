"""The task-clustered bootstrap engine.

The resampling unit is the task (scenario). A resample draws tasks with replacement; every
episode, seed and repetition of a drawn task comes along, and one draw is shared by every
column of the task matrix, so all profiles (and every quantity derived from them) are
resampled together and differences between them are paired.

Vectorised as a weights matrix ``W`` (resamples x tasks; how often each task was drawn) times
the per-task sums ``X`` (tasks x columns): ``W @ X`` gives every resample's column totals at
once, and every statistic is a ratio (or a difference of ratios) of those totals. The weights
are built in fixed-size chunks from one seeded generator, so the result depends only on the
seed, the number of resamples and the task order (tasks are kept sorted by id).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr, ndtri
from scipy.stats import t as t_distribution

from analysis._errors import AnalysisConfigError
from analysis._vocab import IntervalMethod

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

CHUNK_RESAMPLES = 256
"""Resamples drawn per chunk. Part of the determinism contract: changing it changes draws."""


@dataclass(frozen=True)
class BootstrapConfig:
    """How to resample and read off an interval.

    >>> BootstrapConfig(n_resamples=2_000, seed=7).level
    0.95
    """

    n_resamples: int = 10_000
    seed: int = 0
    level: float = 0.95
    method: IntervalMethod = IntervalMethod.BCA
    stratify_by: str | None = None
    """A task-level column (e.g. ``family``): resample tasks within each of its strata."""

    def __post_init__(self) -> None:
        try:  # accept the plain string ("bca") as well as the enum member
            object.__setattr__(self, "method", IntervalMethod(self.method))
        except ValueError:
            raise AnalysisConfigError(
                f"method must be one of {[m.value for m in IntervalMethod]}, got {self.method!r}"
            ) from None
        if self.n_resamples < 1:
            raise AnalysisConfigError(
                f"n_resamples must be at least 1, got {self.n_resamples} (fix: use e.g. 10000)"
            )
        if not 0.0 < self.level < 1.0:
            raise AnalysisConfigError(f"level must be in (0, 1), got {self.level} (e.g. 0.95)")
        if self.seed < 0:
            raise AnalysisConfigError(f"seed must be a non-negative integer, got {self.seed}")


DEFAULT_CONFIG = BootstrapConfig()
"""10,000 resamples, seed 0, 95% BCa, no stratification."""


@dataclass(frozen=True, eq=False)
class TaskMatrix:
    """Per-task sums: one row per task (the resampling unit), one column per quantity.

    ``strata`` (optional) names each task's stratum for a stratified bootstrap.

    >>> m = TaskMatrix(("t1", "t2"), ("wins", "n"), np.array([[1.0, 2.0], [0.0, 2.0]]))
    >>> m.n_tasks, m.index("n")
    (2, 1)
    """

    tasks: tuple[str, ...]
    columns: tuple[str, ...]
    values: FloatArray
    strata: tuple[str, ...] | None = None
    _index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        values = np.array(self.values, dtype=np.float64, copy=True)
        if values.ndim != 2 or values.shape != (len(self.tasks), len(self.columns)):
            raise AnalysisConfigError(
                f"task matrix values have shape {values.shape}, expected "
                f"({len(self.tasks)} tasks, {len(self.columns)} columns)"
            )
        if self.strata is not None and len(self.strata) != len(self.tasks):
            raise AnalysisConfigError("task matrix strata must name one stratum per task")
        if len(set(self.columns)) != len(self.columns):
            raise AnalysisConfigError("task matrix column names must be unique")
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_index", {name: i for i, name in enumerate(self.columns)})

    @property
    def n_tasks(self) -> int:
        """Number of tasks (rows)."""
        return len(self.tasks)

    def index(self, column: str) -> int:
        """Position of a column; raises :class:`AnalysisConfigError` for an unknown name."""
        try:
            return self._index[column]
        except KeyError:
            raise AnalysisConfigError(
                f"task matrix has no column {column!r}; it has {list(self.columns)}"
            ) from None


@dataclass(frozen=True)
class Ratio:
    """``(plus - minus) / over`` on column totals; ``minus`` is optional.

    A rate is ``Ratio("wins", "n")``; a validity gap is ``Ratio("osr", "n", minus="cvsr")``.
    """

    plus: str
    over: str
    minus: str | None = None


@dataclass(frozen=True)
class RatioDifference:
    """``left - right``: a paired contrast when both ratios come from the same resample."""

    left: Ratio
    right: Ratio


@dataclass(frozen=True)
class NamedStatistic:
    """A statistic with the name its results are reported under."""

    name: str
    statistic: Ratio | RatioDifference


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Point estimates and intervals of several statistics from one shared set of resamples."""

    names: tuple[str, ...]
    estimate: FloatArray
    low: FloatArray
    high: FloatArray
    standard_error: FloatArray
    replicates: FloatArray
    """Resampled statistics, shape (resamples, statistics); NaN where undefined."""
    n_undefined: IntArray
    """Resamples in which a statistic was undefined (its denominator drew no episodes)."""
    bca_fallback: BoolArray
    """True where BCa was requested but undefined, so the percentile interval is reported."""
    config: BootstrapConfig
    n_tasks: int

    def position(self, name: str) -> int:
        """Index of a statistic by name."""
        try:
            return self.names.index(name)
        except ValueError:
            raise AnalysisConfigError(f"no statistic named {name!r}") from None


def resample_weights(
    n_tasks: int,
    n_resamples: int,
    seed: int,
    strata: Sequence[str] | None = None,
) -> Iterator[IntArray]:
    """Yield chunks of the weights matrix: how often each task was drawn in each resample.

    Each row sums to the number of tasks (and, when stratified, each stratum's part of a row
    sums to that stratum's size).

    >>> chunks = list(resample_weights(4, 3, seed=1))
    >>> [int(row.sum()) for row in chunks[0]]
    [4, 4, 4]
    """
    rng = np.random.default_rng(seed)
    if n_tasks == 0:
        for start in range(0, n_resamples, CHUNK_RESAMPLES):
            yield np.zeros((min(CHUNK_RESAMPLES, n_resamples - start), 0), dtype=np.int64)
        return
    groups: list[IntArray] | None = None
    if strata is not None:
        labels = np.asarray(list(strata), dtype=object)
        groups = [np.flatnonzero(labels == s).astype(np.int64) for s in sorted(set(strata))]
    for start in range(0, n_resamples, CHUNK_RESAMPLES):
        size = min(CHUNK_RESAMPLES, n_resamples - start)
        if groups is None:
            draws = rng.integers(0, n_tasks, size=(size, n_tasks), dtype=np.int64)
        else:
            parts = [
                g[rng.integers(0, len(g), size=(size, len(g)), dtype=np.int64)] for g in groups
            ]
            draws = np.concatenate(parts, axis=1)
        draws += (np.arange(size, dtype=np.int64) * n_tasks)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n_tasks)
        yield counts.reshape(size, n_tasks)


def resample_totals(matrix: TaskMatrix, config: BootstrapConfig) -> FloatArray:
    """Column totals of every resample, shape (resamples, columns): ``W @ X`` chunk by chunk."""
    strata = matrix.strata if config.stratify_by is not None else None
    if config.stratify_by is not None and strata is None:
        raise AnalysisConfigError(
            f"stratify_by={config.stratify_by!r} needs a task matrix built with strata"
        )
    out = np.empty((config.n_resamples, len(matrix.columns)), dtype=np.float64)
    start = 0
    for weights in resample_weights(matrix.n_tasks, config.n_resamples, config.seed, strata):
        stop = start + weights.shape[0]
        out[start:stop] = weights.astype(np.float64) @ matrix.values
        start = stop
    return out


@dataclass(frozen=True, eq=False)
class _Compiled:
    left_plus: IntArray
    left_minus: IntArray
    left_over: IntArray
    right_plus: IntArray
    right_minus: IntArray
    right_over: IntArray


def _compile(statistics: Sequence[NamedStatistic], matrix: TaskMatrix) -> _Compiled:
    zero, one = len(matrix.columns), len(matrix.columns) + 1

    def ratio(r: Ratio | None) -> tuple[int, int, int]:
        if r is None:
            return zero, zero, one
        minus = zero if r.minus is None else matrix.index(r.minus)
        return matrix.index(r.plus), minus, matrix.index(r.over)

    lefts, rights = [], []
    for named in statistics:
        s = named.statistic
        if isinstance(s, Ratio):
            lefts.append(ratio(s))
            rights.append(ratio(None))
        else:
            lefts.append(ratio(s.left))
            rights.append(ratio(s.right))
    la, ra = np.array(lefts, dtype=np.int64), np.array(rights, dtype=np.int64)
    return _Compiled(la[:, 0], la[:, 1], la[:, 2], ra[:, 0], ra[:, 1], ra[:, 2])


def _evaluate(compiled: _Compiled, totals: FloatArray) -> FloatArray:
    shape = (*totals.shape[:-1], 1)
    ext = np.concatenate([totals, np.zeros(shape), np.ones(shape)], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        left = (ext[..., compiled.left_plus] - ext[..., compiled.left_minus]) / ext[
            ..., compiled.left_over
        ]
        right = (ext[..., compiled.right_plus] - ext[..., compiled.right_minus]) / ext[
            ..., compiled.right_over
        ]
    value = left - right
    value[~np.isfinite(value)] = np.nan
    return np.asarray(value, dtype=np.float64)


def evaluate_statistics(
    statistics: Sequence[NamedStatistic], matrix: TaskMatrix, totals: FloatArray
) -> FloatArray:
    """Evaluate statistics on column totals of shape (..., columns); NaN where undefined."""
    return _evaluate(_compile(statistics, matrix), totals)


def percentile_bounds(replicates: FloatArray, level: float) -> tuple[float, float]:
    """Percentile interval of the finite replicates (linear interpolation, as numpy/scipy).

    >>> percentile_bounds(np.arange(101, dtype=float), 0.5)
    (25.0, 75.0)
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def bca_bounds(
    replicates: FloatArray, estimate: float, jackknife: FloatArray, level: float
) -> tuple[float, float] | None:
    """Bias-corrected and accelerated interval (Efron & Tibshirani 1993, 14.3), or None.

    ``jackknife`` holds the leave-one-task-out estimates. Returns None when BCa is undefined
    (the estimate lies outside every replicate), so the caller can fall back to percentile.
    Follows ``scipy.stats.bootstrap(method="BCa")``: mid-rank bias correction; acceleration
    from the jackknife skewness (zero when the jackknife is constant).
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0 or not np.isfinite(estimate):
        return None
    rank = (np.count_nonzero(finite < estimate) + np.count_nonzero(finite <= estimate)) / (
        2.0 * finite.size
    )
    z0 = float(ndtri(rank))
    if not np.isfinite(z0):
        return None
    jack = jackknife[np.isfinite(jackknife)]
    deviation = jack.mean() - jack if jack.size else np.zeros(1)
    spread = float(np.sum(deviation**2))
    accel = 0.0 if spread == 0.0 else float(np.sum(deviation**3)) / (6.0 * spread**1.5)
    tail = (1.0 - level) / 2.0
    probs = []
    for z in (float(ndtri(tail)), float(ndtri(1.0 - tail))):
        shifted = z0 + z
        probs.append(float(ndtr(z0 + shifted / (1.0 - accel * shifted))))
    if not all(np.isfinite(probs)):
        return None
    low, high = np.quantile(finite, probs)
    return float(low), float(high)


def cluster_robust_t_bounds(
    matrix: TaskMatrix,
    statistics: Sequence[NamedStatistic],
    level: float,
    stratified: bool = False,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cluster-robust t intervals: estimate +/- t(df) x SE, with the SE from the per-task
    linearisation (influence values) of each ratio or ratio difference.

    ``var = T / (T - 1) * sum(z_i ** 2)`` over tasks (per stratum, with the stratum's own
    factor and centring, when ``stratified``); ``df = T - 1`` (``T - strata``). This is the
    CR1 sandwich variance with the small-sample t reference of Cameron & Miller (2015), the
    usual choice when there are few clusters. Rates are clipped to [0, 1], differences and
    gaps to [-1, 1]. Returns ``(low, high, standard_error)``.
    """
    compiled = _compile(statistics, matrix)
    x = matrix.values
    n_tasks = matrix.n_tasks
    ext = np.concatenate([x, np.zeros((n_tasks, 1)), np.ones((n_tasks, 1))], axis=1)
    totals = ext.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        influence = np.zeros((n_tasks, len(statistics)))
        for sign, plus, minus, over in (
            (1.0, compiled.left_plus, compiled.left_minus, compiled.left_over),
            (-1.0, compiled.right_plus, compiled.right_minus, compiled.right_over),
        ):
            ratio = (totals[plus] - totals[minus]) / totals[over]
            influence += (
                sign * ((ext[:, plus] - ext[:, minus]) - ratio * ext[:, over]) / totals[over]
            )
        estimate = _evaluate(compiled, totals[: len(matrix.columns)])
    labels = matrix.strata if stratified and matrix.strata is not None else ("",) * n_tasks
    strata = np.asarray(labels, dtype=object)
    variance = np.zeros(len(statistics))
    df = 0
    for label in sorted(set(labels)):
        rows = influence[strata == label]
        size = rows.shape[0]
        if size < 2:
            continue
        centred = rows - rows.mean(axis=0)
        variance += size / (size - 1.0) * np.sum(centred**2, axis=0)
        df += size - 1
    se = np.sqrt(variance)
    if df < 1:
        nan = np.full(len(statistics), np.nan)
        return nan, nan, nan
    half = float(t_distribution.ppf(0.5 + level / 2.0, df)) * se
    is_rate = (compiled.right_over == len(matrix.columns) + 1) & (
        compiled.left_minus == len(matrix.columns)
    )
    floor = np.where(is_rate, 0.0, -1.0)
    return np.clip(estimate - half, floor, 1.0), np.clip(estimate + half, floor, 1.0), se


def clustered_bootstrap(
    matrix: TaskMatrix,
    statistics: Sequence[NamedStatistic],
    config: BootstrapConfig = DEFAULT_CONFIG,
) -> BootstrapResult:
    """Task-clustered bootstrap of several statistics from one shared set of resamples.

    >>> m = TaskMatrix(
    ...     tuple(f"t{i}" for i in range(20)),
    ...     ("a", "b", "n"),
    ...     np.array([[i % 2, 1, 1] for i in range(20)], dtype=float),
    ... )
    >>> stats = [NamedStatistic("rate_a", Ratio("a", "n")),
    ...          NamedStatistic("a_minus_b", RatioDifference(Ratio("a", "n"), Ratio("b", "n")))]
    >>> r = clustered_bootstrap(m, stats, BootstrapConfig(n_resamples=2_000, seed=3))
    >>> r.estimate.tolist()
    [0.5, -0.5]
    >>> bool(r.low[0] < 0.5 < r.high[0])
    True
    """
    if not statistics:
        raise AnalysisConfigError("clustered_bootstrap needs at least one statistic")
    compiled = _compile(statistics, matrix)
    totals = matrix.values.sum(axis=0)
    estimate = _evaluate(compiled, totals)
    replicates = _evaluate(compiled, resample_totals(matrix, config))
    n_stats = len(statistics)
    low = np.full(n_stats, np.nan)
    high = np.full(n_stats, np.nan)
    fallback = np.zeros(n_stats, dtype=np.bool_)
    jackknife: FloatArray | None = None
    if config.method is IntervalMethod.BCA:
        jackknife = _evaluate(compiled, totals[None, :] - matrix.values)
    t_bounds: tuple[FloatArray, FloatArray, FloatArray] | None = None
    if config.method is IntervalMethod.CLUSTER_T:
        t_bounds = cluster_robust_t_bounds(
            matrix, statistics, config.level, stratified=config.stratify_by is not None
        )
    for j in range(n_stats):
        if t_bounds is not None and np.isfinite(t_bounds[0][j]):
            low[j], high[j] = t_bounds[0][j], t_bounds[1][j]
            continue
        fallback[j] = t_bounds is not None  # fewer than two tasks: no t interval
        bounds: tuple[float, float] | None = None
        if jackknife is not None:
            bounds = bca_bounds(replicates[:, j], float(estimate[j]), jackknife[:, j], config.level)
            fallback[j] = bounds is None
        if bounds is None:
            bounds = percentile_bounds(replicates[:, j], config.level)
        low[j], high[j] = bounds
    undefined = np.count_nonzero(~np.isfinite(replicates), axis=0).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        finite_counts = replicates.shape[0] - undefined
        se = np.array(
            [
                float(np.nanstd(replicates[:, j], ddof=1)) if finite_counts[j] > 1 else np.nan
                for j in range(n_stats)
            ]
        )
    return BootstrapResult(
        names=tuple(s.name for s in statistics),
        estimate=estimate,
        low=low,
        high=high,
        standard_error=se,
        replicates=replicates,
        n_undefined=undefined,
        bca_fallback=fallback,
        config=config,
        n_tasks=matrix.n_tasks,
    )
