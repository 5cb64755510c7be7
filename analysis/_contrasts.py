"""Paired contrasts between levels of a factor (profiles by default), within task.

Every contrast uses only the tasks both levels ran, and all contrasts share one set of
task resamples. Beside the clustered interval of the difference come two tests on the
per-task differences: the exact McNemar test (a sign test on the discordant tasks; with one
episode per task it is McNemar's test exactly) and a paired permutation test (random sign
flips of the per-task differences, via ``scipy.stats.permutation_test``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

import numpy as np
import polars as pl
from scipy.stats import binomtest, permutation_test

from analysis._bootstrap import (
    DEFAULT_CONFIG,
    BootstrapConfig,
    BootstrapResult,
    NamedStatistic,
    Ratio,
    RatioDifference,
    TaskMatrix,
    clustered_bootstrap,
)
from analysis._errors import AnalysisConfigError
from analysis._frames import (
    EPISODE_COLUMNS,
    FLAG_COLUMNS,
    GROUP_INDEX,
    grouped_tasks,
    ordered_levels,
    require_columns,
    require_group_columns,
    require_rows,
)
from analysis._vocab import Metric

_PERMUTATION_TAKES_RNG = "rng" in inspect.signature(permutation_test).parameters

CONTRAST_COLUMNS: tuple[str, ...] = (
    "metric",
    "factor",
    "left",
    "right",
    "left_estimate",
    "right_estimate",
    "difference",
    "ci_low",
    "ci_high",
    "ci_method",
    "n_tasks",
    "left_higher",
    "right_higher",
    "mcnemar_p",
    "permutation_p",
    "permutation_method",
    "permutation_p_floor",
    "mcnemar_p_holm",
    "permutation_p_holm",
    "excluded",
)
"""Columns of a contrasts frame after the grouping (`within`) columns, in order."""


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN entries are left out).

    Computed as ``statsmodels.stats.multitest.multipletests(method="holm")`` does, on the
    finite entries; a NaN (a contrast that was not tested) is no member of the family.

    >>> holm_adjust([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    >>> holm_adjust([0.01, float("nan")])
    [0.01, nan]
    """
    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    present = np.flatnonzero(np.isfinite(values))
    if present.size:
        adjusted[present] = _holm(values[present])
    return [round(float(v), 15) for v in adjusted]


def _holm(p: np.ndarray) -> np.ndarray:
    """``multipletests(p, method="holm")[1]``, the same operations in the same order, written
    out because statsmodels runs a full ``gc.collect()`` on every Holm call (0.2 s or more
    in a process holding many objects; it dominated the property test and `analyze`).
    `tests/analysis/test_contrasts.py` checks it against statsmodels."""
    order = np.argsort(p)
    corrected = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
    corrected[corrected > 1] = 1
    out = np.empty_like(corrected)
    out[order] = corrected
    return out


def mcnemar_exact(left_higher: int, right_higher: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts (a binomial sign test).

    Never 0: with ``d`` discordant tasks the smallest value is ``2 ** (1 - d)``.

    >>> mcnemar_exact(5, 0)
    0.0625
    >>> mcnemar_exact(0, 0), mcnemar_exact(1, 0)
    (1.0, 1.0)
    """
    discordant = left_higher + right_higher
    if discordant == 0:
        return 1.0
    return float(binomtest(left_higher, discordant, 0.5).pvalue)


class PermutationMethod(StrEnum):
    """How a paired permutation p-value was computed."""

    EXACT = "exact"
    """Every sign flip of the differing tasks counted (the exact null distribution)."""
    MONTE_CARLO = "monte_carlo"
    """Seeded random sign flips; the p-value cannot fall below ``1 / (resamples + 1)``."""


@dataclass(frozen=True)
class PermutationTest:
    """A paired sign-flip permutation test's two-sided p-value and how it was obtained."""

    p_value: float
    method: PermutationMethod
    n_differing: int
    """Tasks whose two values differ (the only ones a sign flip can move)."""
    floor: float | None
    """Smallest p-value the Monte Carlo test can report (``1 / (B + 1)``); None when exact."""


EXACT_WORK_LIMIT = 200_000_000
"""Largest tasks x grid-range product the exact convolution may cost (about a second);
beyond it the test falls back to random sign flips and reports their floor."""
MAX_DENOMINATOR = 10_000
"""Per-task rates are counts over at most this many episodes when recovered as fractions."""


def _integer_grid(differences: np.ndarray) -> np.ndarray | None:
    """The differences as integers on a common grid, or None when no small grid fits.

    Per-task rates are counts over episodes, so their differences are fractions with small
    denominators; scaled by the least common multiple of those denominators they are integers.
    """
    fractions = [Fraction(float(d)).limit_denominator(MAX_DENOMINATOR) for d in differences]
    if any(abs(float(f) - float(d)) > 1e-12 for f, d in zip(fractions, differences, strict=True)):
        return None
    scale = math.lcm(*(f.denominator for f in fractions))
    grid = np.array([int(f * scale) for f in fractions], dtype=np.int64)
    if grid.size * (2 * int(np.abs(grid).sum()) + 1) > EXACT_WORK_LIMIT:
        return None
    return grid


def _exact_sign_flip_p(grid: np.ndarray) -> float:
    """P(|sum of randomly signed grid values| >= |observed sum|), by convolution.

    The null distribution of the signed sum is built one task at a time (each task adds or
    subtracts its value with probability 1/2), so the cost is tasks x range, not 2 ** tasks.
    """
    total = int(np.abs(grid).sum())
    probability = np.zeros(2 * total + 1)
    probability[total] = 1.0
    for value in np.abs(grid):
        v = int(value)
        shifted = np.zeros_like(probability)
        shifted[v:] += probability[: probability.size - v]
        shifted[: probability.size - v] += probability[v:]
        probability = 0.5 * shifted
    observed = abs(int(grid.sum()))
    support = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, probability[support >= observed].sum()))


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.asarray(np.mean(x - y, axis=axis))


def permutation_test_result(
    left: np.ndarray, right: np.ndarray, *, n_resamples: int = 9_999, seed: int = 0
) -> PermutationTest:
    """Two-sided paired sign-flip permutation test of the mean per-task difference.

    Tasks with equal values contribute nothing under any relabelling, so only the differing
    tasks are flipped. The test is exact whenever the differences sit on a small common grid
    (always, for per-task rates of counts over a few episodes): the null distribution of the
    summed differences is convolved task by task. Otherwise ``n_resamples`` seeded random
    flips are drawn (``scipy.stats.permutation_test``) and the floor ``1 / (B + 1)`` is
    reported with the p-value. One differing task gives p = 1 (both signs are as extreme).

    >>> permutation_test_result(np.array([1.0, 0.0, 0.0]), np.zeros(3))
    PermutationTest(p_value=1.0, method=<PermutationMethod.EXACT: 'exact'>, n_differing=1, floor=None)
    """
    left = np.asarray(left, dtype=np.float64)
    right = np.asarray(right, dtype=np.float64)
    differs = left != right
    n = int(differs.sum())
    if n <= 1:
        return PermutationTest(1.0, PermutationMethod.EXACT, n, None)
    grid = _integer_grid(left[differs] - right[differs])
    if grid is not None:
        return PermutationTest(_exact_sign_flip_p(grid), PermutationMethod.EXACT, n, None)
    kwargs: dict[str, object] = {"n_resamples": n_resamples, "permutation_type": "samples"}
    rng = np.random.default_rng(seed)
    if _PERMUTATION_TAKES_RNG:
        kwargs["rng"] = rng
    else:  # pragma: no cover - scipy < 1.15
        kwargs["random_state"] = rng
    result = permutation_test(
        (left[differs], right[differs]), _mean_difference, vectorized=True, **kwargs
    )
    exact = n_resamples >= 2**n  # scipy enumerates every flip when they are this few
    return PermutationTest(
        float(min(1.0, result.pvalue)),
        PermutationMethod.EXACT if exact else PermutationMethod.MONTE_CARLO,
        n,
        None if exact else 1.0 / (n_resamples + 1),
    )


def paired_permutation_p(
    left: np.ndarray, right: np.ndarray, *, n_resamples: int = 9_999, seed: int = 0
) -> float:
    """The p-value of :func:`permutation_test_result`.

    >>> paired_permutation_p(np.array([1.0] * 5 + [0.0] * 35), np.zeros(40))
    0.0625
    >>> paired_permutation_p(np.array([1.0] * 30 + [0.0] * 10), np.zeros(40)) > 0
    True
    """
    return permutation_test_result(left, right, n_resamples=n_resamples, seed=seed).p_value


@dataclass(frozen=True)
class ContrastsResult:
    """Paired contrasts, one row per (within-group, metric, pair), plus the multiplicity note."""

    frame: pl.DataFrame
    note: str
    """Empty for a single comparison; else says the intervals are exploratory and uncorrected."""
    bootstrap: BootstrapResult


def multiplicity_note(n_comparisons: int, level: float) -> str:
    """The caveat printed under a table of several contrasts.

    >>> multiplicity_note(1, 0.95)
    ''
    """
    if n_comparisons <= 1:
        return ""
    return (
        f"{n_comparisons} paired comparisons: the {level:.0%} intervals and p-values are "
        "per comparison (exploratory) and not corrected for multiplicity; Holm-adjusted "
        "p-values (*_holm) control the family-wise error over these comparisons."
    )


def paired_contrasts(
    episodes: pl.DataFrame,
    *,
    factor: str = "profile",
    metrics: Sequence[Metric] = (Metric.CVSR,),
    reference: object | None = None,
    pairs: Sequence[tuple[object, object]] | None = None,
    within: Sequence[str] = (),
    config: BootstrapConfig = DEFAULT_CONFIG,
    permutation_resamples: int = 9_999,
    task: str = "scenario_id",
) -> ContrastsResult:
    """Differences ``left - right`` of a metric between levels of ``factor``, paired by task.

    By default every level is compared with ``reference`` (the first level in canonical order
    when not given); ``pairs`` lists explicit ``(left, right)`` pairs instead. ``within``
    repeats the contrasts inside each combination of other columns (e.g. per family).

    >>> from analysis._synthetic import ablation_standin
    >>> episodes = ablation_standin().episodes
    >>> result = paired_contrasts(
    ...     episodes, pairs=[("full_lifecycle", "reconciled")],
    ...     config=BootstrapConfig(n_resamples=2_000, seed=0))
    >>> row = result.frame.row(0, named=True)
    >>> row["difference"], row["left_higher"], row["right_higher"], row["mcnemar_p"]
    (0.125, 5, 0, 0.0625)
    """
    within = tuple(within)
    require_columns(episodes, {c: EPISODE_COLUMNS[c] for c in (task, *FLAG_COLUMNS)})
    require_group_columns(episodes, [task, *within, factor], "episodes")
    require_rows(episodes, task)
    if permutation_resamples < 1:
        raise AnalysisConfigError("permutation_resamples must be at least 1")
    levels = ordered_levels(episodes, factor)
    if pairs is None:
        ref = levels[0] if reference is None else reference
        if ref not in levels:
            raise AnalysisConfigError(
                f"reference {ref!r} is not a level of {factor!r} (levels: {levels})"
            )
        pairs = [(level, ref) for level in levels if level != ref]
    for left, right in pairs:
        for level in (left, right):
            if level not in levels:
                raise AnalysisConfigError(
                    f"{level!r} is not a level of {factor!r} (levels: {levels})"
                )
    tasks = grouped_tasks(episodes, (*within, factor), task=task, strata=config.stratify_by)
    keys = tasks.keys
    within_keys = keys.select(list(within)).unique(maintain_order=True) if within else None
    combos: list[dict[str, object]] = within_keys.to_dicts() if within_keys is not None else [{}]

    def group_of(combo: dict[str, object], level: object) -> int | None:
        match = keys
        for name, value in {**combo, factor: level}.items():
            match = match.filter(pl.col(name).eq_missing(value))
        return int(match[GROUP_INDEX][0]) if match.height else None

    columns: list[str] = []
    blocks: list[np.ndarray] = []
    statistics: list[NamedStatistic] = []
    rows: list[dict[str, object]] = []
    p_values: list[tuple[float, float]] = []  # NaN for a contrast that was not tested
    for combo in combos:
        for metric in metrics:
            for left, right in pairs:
                gl, gr = group_of(combo, left), group_of(combo, right)
                if gl is None or gr is None:
                    continue
                c = len(rows)
                both = (tasks.values(gl, "n") > 0) & (tasks.values(gr, "n") > 0)
                per_task: dict[str, np.ndarray] = {}
                for side, g in (("L", gl), ("R", gr)):
                    n = tasks.values(g, "n") * both
                    plus = tasks.values(g, metric.plus_flag) * both
                    minus = (
                        np.zeros_like(n)
                        if metric.minus_flag is None
                        else tasks.values(g, metric.minus_flag) * both
                    )
                    for q, v in (("n", n), ("plus", plus), ("minus", minus)):
                        columns.append(f"{c}:{side}:{q}")
                        blocks.append(v)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        per_task[side] = ((plus - minus) / n)[both]

                def ratio(side: str, c: int = c) -> Ratio:
                    return Ratio(f"{c}:{side}:plus", f"{c}:{side}:n", minus=f"{c}:{side}:minus")

                statistics += [
                    NamedStatistic(f"{c}:diff", RatioDifference(ratio("L"), ratio("R"))),
                    NamedStatistic(f"{c}:L", ratio("L")),
                    NamedStatistic(f"{c}:R", ratio("R")),
                ]
                lt, rt = per_task["L"], per_task["R"]
                left_higher = int(np.count_nonzero(lt > rt))
                right_higher = int(np.count_nonzero(rt > lt))
                shared = int(both.sum())
                row: dict[str, object] = {
                    **combo,
                    "metric": str(metric),
                    "factor": factor,
                    "left": str(left),
                    "right": str(right),
                    "n_tasks": shared,
                    "left_higher": left_higher,
                    "right_higher": right_higher,
                    "mcnemar_p": None,
                    "permutation_p": None,
                    "permutation_method": None,
                    "permutation_p_floor": None,
                    "excluded": None,
                }
                if shared == 0:
                    # Nothing is paired: no difference to estimate, no test, no Holm member.
                    row["excluded"] = f"no scenario run by both {left} and {right}"
                    p_values.append((math.nan, math.nan))
                else:
                    permutation = permutation_test_result(
                        lt, rt, n_resamples=permutation_resamples, seed=config.seed
                    )
                    row.update(
                        mcnemar_p=mcnemar_exact(left_higher, right_higher),
                        permutation_p=permutation.p_value,
                        permutation_method=str(permutation.method),
                        permutation_p_floor=permutation.floor,
                    )
                    p_values.append((mcnemar_exact(left_higher, right_higher), permutation.p_value))
                rows.append(row)
    if not rows:
        raise AnalysisConfigError(f"no pair of {factor!r} levels to compare (levels: {levels})")
    matrix = TaskMatrix(
        tasks.matrix.tasks, tuple(columns), np.column_stack(blocks), tasks.matrix.strata
    )
    boot = clustered_bootstrap(matrix, statistics, config)
    for c, row in enumerate(rows):
        d, lj, rj = (boot.position(f"{c}:{s}") for s in ("diff", "L", "R"))
        tested = row["excluded"] is None
        row.update(
            left_estimate=_finite(boot.estimate[lj]),
            right_estimate=_finite(boot.estimate[rj]),
            difference=_finite(boot.estimate[d]) if tested else None,
            ci_low=_finite(boot.low[d]) if tested else None,
            ci_high=_finite(boot.high[d]) if tested else None,
            ci_method=str("percentile" if boot.bca_fallback[d] else config.method)
            if tested
            else None,
        )
    for i, test in enumerate(("mcnemar_p", "permutation_p")):
        adjusted = holm_adjust([pair[i] for pair in p_values])
        for row, value in zip(rows, adjusted, strict=True):
            row[f"{test}_holm"] = None if math.isnan(value) else value
    order = [*within, *CONTRAST_COLUMNS]
    schema = {name: episodes.schema[name] for name in within} | _CONTRAST_SCHEMA
    frame = pl.DataFrame(rows, schema_overrides=schema).select(order)
    n_tested = sum(row["excluded"] is None for row in rows)
    note = multiplicity_note(n_tested, config.level)
    excluded = [row for row in rows if row["excluded"] is not None]
    if excluded:
        note = " ".join(
            [
                note,
                f"{len(excluded)} contrast(s) left out of the Holm family: "
                + "; ".join(str(row["excluded"]) for row in excluded)
                + ".",
            ]
        ).strip()
    return ContrastsResult(frame=frame, note=note, bootstrap=boot)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


_CONTRAST_SCHEMA: dict[str, pl.DataType] = {
    "left_estimate": pl.Float64(),
    "right_estimate": pl.Float64(),
    "difference": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "ci_method": pl.String(),
    "mcnemar_p": pl.Float64(),
    "permutation_p": pl.Float64(),
    "permutation_method": pl.String(),
    "permutation_p_floor": pl.Float64(),
    "mcnemar_p_holm": pl.Float64(),
    "permutation_p_holm": pl.Float64(),
    "excluded": pl.String(),
}
