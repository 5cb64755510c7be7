"""Paired contrasts between levels of a factor (profiles by default), within task.

Every contrast uses only the tasks both levels ran, and all contrasts share one set of
task resamples. Beside the clustered interval of the difference come two tests on the
per-task differences: the exact McNemar test (a sign test on the discordant tasks; with one
episode per task it is McNemar's test exactly) and a paired permutation test (random sign
flips of the per-task differences, via ``scipy.stats.permutation_test``).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass

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
    "mcnemar_p_holm",
    "permutation_p_holm",
)
"""Columns of a contrasts frame after the grouping (`within`) columns, in order."""


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN entries are left out).

    >>> holm_adjust([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    present = np.flatnonzero(np.isfinite(values))
    m = present.size
    order = present[np.argsort(values[present], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(values[i])))
        adjusted[i] = running
    return [round(float(v), 15) for v in adjusted]


def mcnemar_exact(left_higher: int, right_higher: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts (a binomial sign test).

    >>> mcnemar_exact(5, 0)
    0.0625
    >>> mcnemar_exact(0, 0)
    1.0
    """
    discordant = left_higher + right_higher
    if discordant == 0:
        return 1.0
    return float(binomtest(left_higher, discordant, 0.5).pvalue)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.asarray(np.mean(x - y, axis=axis))


def paired_permutation_p(
    left: np.ndarray, right: np.ndarray, *, n_resamples: int = 9_999, seed: int = 0
) -> float:
    """Two-sided paired permutation p-value of the mean per-task difference.

    Tasks with equal values contribute nothing under any relabelling, so only the differing
    tasks are permuted; with at most ``log2(n_resamples)`` of them the test is exact.

    >>> paired_permutation_p(np.array([1.0] * 5 + [0.0] * 35), np.zeros(40))
    0.0625
    >>> paired_permutation_p(np.array([1.0, 0.0]), np.zeros(2))  # one differing task
    1.0
    """
    differs = left != right
    if differs.sum() < 2:
        # Zero or one differing task: every sign flip gives the same |mean|, so p = 1
        # (and scipy refuses a sample of one).
        return 1.0
    kwargs: dict[str, object] = {"n_resamples": n_resamples, "permutation_type": "samples"}
    rng = np.random.default_rng(seed)
    if _PERMUTATION_TAKES_RNG:
        kwargs["rng"] = rng
    else:  # pragma: no cover - scipy < 1.15
        kwargs["random_state"] = rng
    result = permutation_test(
        (left[differs], right[differs]), _mean_difference, vectorized=True, **kwargs
    )
    return float(min(1.0, result.pvalue))


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
    tests: list[tuple[float, float]] = []
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
                tests.append(
                    (
                        mcnemar_exact(left_higher, right_higher),
                        paired_permutation_p(
                            lt, rt, n_resamples=permutation_resamples, seed=config.seed
                        ),
                    )
                )
                rows.append(
                    {
                        **combo,
                        "metric": str(metric),
                        "factor": factor,
                        "left": str(left),
                        "right": str(right),
                        "n_tasks": int(both.sum()),
                        "left_higher": left_higher,
                        "right_higher": right_higher,
                        "mcnemar_p": tests[-1][0],
                        "permutation_p": tests[-1][1],
                    }
                )
    if not rows:
        raise AnalysisConfigError(f"no pair of {factor!r} levels to compare (levels: {levels})")
    matrix = TaskMatrix(
        tasks.matrix.tasks, tuple(columns), np.column_stack(blocks), tasks.matrix.strata
    )
    boot = clustered_bootstrap(matrix, statistics, config)
    for c, row in enumerate(rows):
        d, lj, rj = (boot.position(f"{c}:{s}") for s in ("diff", "L", "R"))
        row.update(
            left_estimate=float(boot.estimate[lj]),
            right_estimate=float(boot.estimate[rj]),
            difference=float(boot.estimate[d]),
            ci_low=float(boot.low[d]),
            ci_high=float(boot.high[d]),
            ci_method=str("percentile" if boot.bca_fallback[d] else config.method),
        )
    mcnemar_holm = holm_adjust([p for p, _ in tests])
    permutation_holm = holm_adjust([p for _, p in tests])
    for row, mh, ph in zip(rows, mcnemar_holm, permutation_holm, strict=True):
        row.update(mcnemar_p_holm=mh, permutation_p_holm=ph)
    order = [*within, *CONTRAST_COLUMNS]
    schema = {name: episodes.schema[name] for name in within}
    frame = pl.DataFrame(rows, schema_overrides=schema).select(order)
    return ContrastsResult(
        frame=frame, note=multiplicity_note(len(rows), config.level), bootstrap=boot
    )
