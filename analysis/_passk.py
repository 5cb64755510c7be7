"""pass^k: the chance that k independent repeats of a task all succeed (tau-bench).

Per task with ``n`` trials of which ``c`` succeeded, the unbiased estimator of
``p_task ** k`` is ``C(c, k) / C(n, k)``; pass^k is its mean over the tasks that ran at least
``k`` times (``n_tasks`` per row says how many). When tasks ran unequally often, the set of
tasks changes with ``k`` and the curve can even rise, so an :class:`AnalysisWarning` says so.
The interval resamples tasks like every other interval here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import polars as pl

from analysis._bootstrap import (
    DEFAULT_CONFIG,
    BootstrapConfig,
    NamedStatistic,
    Ratio,
    TaskMatrix,
    clustered_bootstrap,
)
from analysis._errors import AnalysisConfigError, AnalysisWarning
from analysis._frames import EPISODE_COLUMNS, GROUP_INDEX, grouped_tasks, require_columns
from analysis._vocab import SuccessFlag


def pass_hat_k_per_task(successes: np.ndarray, trials: np.ndarray, k: int) -> np.ndarray:
    """``C(c, k) / C(n, k)`` per task, as a product to stay exact in floating point.

    Tasks with fewer than ``k`` trials get NaN (they cannot inform pass^k).

    >>> pass_hat_k_per_task(np.array([3.0, 5.0, 4.0]), np.array([5.0, 5.0, 4.0]), 2).tolist()
    [0.3, 1.0, 1.0]
    >>> pass_hat_k_per_task(np.array([1.0]), np.array([1.0]), 2).tolist()
    [nan]
    """
    if k < 1:
        raise AnalysisConfigError(f"k must be at least 1, got {k}")
    c = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    value = np.ones_like(n)
    for i in range(k):
        with np.errstate(invalid="ignore", divide="ignore"):
            value *= np.clip(c - i, 0.0, None) / (n - i)
    value[n < k] = np.nan
    return value


def pass_hat_k(
    episodes: pl.DataFrame,
    group_by: Sequence[str] = ("profile",),
    *,
    flag: SuccessFlag = SuccessFlag.COMMIT_VALID,
    ks: Sequence[int] | None = None,
    config: BootstrapConfig = DEFAULT_CONFIG,
    task: str = "scenario_id",
) -> pl.DataFrame:
    """pass^k per group for k from 1 to the most repetitions a task of the group ran (or ``ks``).

    pass^k is defined over the tasks that ran at least k times (``n_tasks`` says how many
    did); a ``k`` no task of a group reached has a null estimate and interval (never NaN).
    If the tasks of a group ran unequally often, the tasks behind pass^k change with k, and an
    :class:`~analysis.AnalysisWarning` says so. All groups and all k share one set of task
    resamples.

    >>> frame = pl.DataFrame({
    ...     "scenario_id": ["a"] * 4 + ["b"] * 4,
    ...     "profile": ["direct"] * 8,
    ...     "commit_valid_success": [True, True, True, False, True, True, True, True],
    ... })
    >>> pass_hat_k(frame, config=BootstrapConfig(n_resamples=200)).select(
    ...     "k", "estimate", "n_tasks").rows()
    [(1, 0.875, 2), (2, 0.75, 2), (3, 0.625, 2), (4, 0.5, 2)]
    """
    group_by = tuple(group_by)
    require_columns(episodes, {c: EPISODE_COLUMNS[c] for c in (task, str(flag))})
    tasks = grouped_tasks(
        episodes, group_by, task=task, strata=config.stratify_by, quantities=[str(flag)]
    )
    requested = None if ks is None else sorted(set(ks))
    if requested is not None and (not requested or requested[0] < 1):
        raise AnalysisConfigError(f"k values must be positive integers, got {requested}")
    uneven: list[str] = []
    columns: list[str] = []
    blocks: list[np.ndarray] = []
    statistics: list[NamedStatistic] = []
    rows: list[dict[str, object]] = []
    for g in range(tasks.n_groups):
        n = tasks.values(g, "n")
        c = tasks.values(g, str(flag))
        ran = n[n > 0]
        if ran.size and ran.min() != ran.max():
            uneven.append(
                f"{_group_label(tasks.keys, group_by, g)}: {int(ran.min())} to {int(ran.max())}"
            )
        group_ks = list(range(1, int(ran.max()) + 1)) if requested is None else requested
        for k in group_ks:
            value = pass_hat_k_per_task(c, n, k)
            eligible = np.isfinite(value)
            columns += [f"{g}:{k}:value", f"{g}:{k}:tasks"]
            blocks += [np.where(eligible, value, 0.0), eligible.astype(np.float64)]
            name = f"{g}:{k}"
            statistics.append(NamedStatistic(name, Ratio(f"{name}:value", f"{name}:tasks")))
            rows.append({GROUP_INDEX: g, "k": k, "n_tasks": int(eligible.sum())})
    matrix = TaskMatrix(
        tasks.matrix.tasks, tuple(columns), np.column_stack(blocks), tasks.matrix.strata
    )
    if uneven:
        warnings.warn(
            AnalysisWarning(
                "pass^k: tasks ran unequally often ("
                + "; ".join(uneven)
                + " repetitions), so pass^k at each k is over the tasks that ran at least k "
                "times and the set of tasks changes with k (see n_tasks); compare k only "
                "within rows of equal n_tasks, or run every task equally often"
            ),
            stacklevel=2,
        )
    boot = clustered_bootstrap(matrix, statistics, config)
    for row, j in zip(rows, range(len(rows)), strict=True):
        defined = bool(row["n_tasks"])  # no task ran k times: undefined, not NaN
        row.update(
            estimate=float(boot.estimate[j]) if defined else None,
            ci_low=float(boot.low[j]) if defined else None,
            ci_high=float(boot.high[j]) if defined else None,
            ci_method=str("percentile" if boot.bca_fallback[j] else config.method)
            if defined
            else None,
        )
    frame = pl.DataFrame(
        rows,
        schema={
            GROUP_INDEX: pl.Int64,
            "k": pl.Int64,
            "n_tasks": pl.Int64,
            "estimate": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "ci_method": pl.String,
        },
    )
    frame = frame.with_columns(pl.lit(str(flag)).alias("flag"))
    return (
        tasks.keys.join(frame, on=GROUP_INDEX)
        .sort(GROUP_INDEX, "k")
        .drop(GROUP_INDEX)
        .select(*group_by, "flag", "k", "estimate", "ci_low", "ci_high", "ci_method", "n_tasks")
    )


def _group_label(keys: pl.DataFrame, group_by: Sequence[str], g: int) -> str:
    row = keys.filter(pl.col(GROUP_INDEX) == g).row(0, named=True)
    return " / ".join(str(row[name]) for name in group_by) or "all"
