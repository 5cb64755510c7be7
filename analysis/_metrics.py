"""Headline metrics (OSR, PAOSR, CVSR, VG, PAVG) with task-clustered and small-n intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis._bootstrap import (
    DEFAULT_CONFIG,
    BootstrapConfig,
    BootstrapResult,
    NamedStatistic,
    Ratio,
    clustered_bootstrap,
)
from analysis._frames import (
    EPISODE_COLUMNS,
    FLAG_COLUMNS,
    GROUP_INDEX,
    GroupedTasks,
    grouped_tasks,
    require_columns,
)
from analysis._intervals import binomial_interval
from analysis._vocab import Metric, SmallNMethod

METRIC_ORDER: tuple[Metric, ...] = tuple(Metric)


def metric_statistic(metric: Metric, group: int) -> Ratio:
    """The ratio of task-matrix columns that is ``metric`` for group ``group``.

    >>> metric_statistic(Metric.VG, 2)
    Ratio(plus='2:outcome_success', over='2:n', minus='2:commit_valid_success')
    """
    minus = metric.minus_flag
    return Ratio(
        plus=GroupedTasks.column(group, metric.plus_flag),
        over=GroupedTasks.column(group, "n"),
        minus=None if minus is None else GroupedTasks.column(group, minus),
    )


def statistic_name(metric: Metric, group: int) -> str:
    """Name a group's metric in a :class:`BootstrapResult`."""
    return f"{group}:{metric}"


def effective_n(successes: np.ndarray, trials: np.ndarray) -> float:
    """Kish effective sample size of a pooled rate whose episodes cluster in tasks.

    ``n / deff`` with the design effect ``deff = v_cluster / v_binomial``: the cluster-robust
    (ratio-linearised) variance of the pooled rate over ``T`` tasks,
    ``T / (T - 1) * sum((s_i - p * m_i) ** 2) / n ** 2``, over the binomial variance
    ``p * (1 - p) / n``. The ``T / (T - 1)`` factor is the usual small-sample correction of
    the cluster-robust variance (without it, the variance is biased low by that factor).
    The result is kept within [T, n]. One episode per task gives exactly ``n``. Fewer than two
    tasks, or a rate of 0 or 1 over repeated episodes, give ``T``: the between-task variance
    cannot be estimated, so no more than one unit per task is claimed.

    >>> effective_n(np.array([1.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0]))
    3.0
    >>> effective_n(np.array([5.0, 5.0]), np.array([5.0, 5.0]))
    2.0
    >>> effective_n(np.array([5.0, 0.0, 5.0, 0.0]), np.array([5.0, 5.0, 5.0, 5.0]))
    4.0
    >>> effective_n(np.array([1.0]), np.array([5.0])), effective_n(np.array([0.0]), np.array([5.0]))
    (1.0, 1.0)
    """
    present = trials > 0
    s, m = successes[present], trials[present]
    n_tasks, n = float(present.sum()), float(m.sum())
    if n == 0:
        return 0.0
    if float(m.max()) <= 1.0:
        return n
    p = float(s.sum()) / n
    if n_tasks < 2 or p in (0.0, 1.0):
        return n_tasks
    clustered = n_tasks / (n_tasks - 1.0) * float(np.sum((s - p * m) ** 2)) / (n * n)
    if clustered == 0.0:
        return n
    binomial = p * (1.0 - p) / n
    return float(np.clip(n * binomial / clustered, n_tasks, n))


@dataclass(frozen=True)
class MetricsResult:
    """The headline metrics frame and the bootstrap it was read from (for reuse in figures)."""

    frame: pl.DataFrame
    bootstrap: BootstrapResult
    tasks: GroupedTasks


def rate_counts(episodes: pl.DataFrame, group_by: Sequence[str] = ("profile",)) -> pl.DataFrame:
    """Per group: episodes ``n``, tasks, and the success count ``k`` of each rate.

    >>> frame = pl.DataFrame({
    ...     "scenario_id": ["a", "b", "a", "b"],
    ...     "profile": ["direct", "direct", "full_lifecycle", "full_lifecycle"],
    ...     "outcome_success": [True, True, True, True],
    ...     "policy_aware_outcome_success": [True, False, True, True],
    ...     "commit_valid_success": [False, False, True, True],
    ... })
    >>> rate_counts(frame)
    shape: (2, 6)
    ┌────────────────┬─────┬─────────┬───────┬─────────┬────────┐
    │ profile        ┆ n   ┆ n_tasks ┆ OSR_k ┆ PAOSR_k ┆ CVSR_k │
    │ ---            ┆ --- ┆ ---     ┆ ---   ┆ ---     ┆ ---    │
    │ str            ┆ i64 ┆ i64     ┆ i64   ┆ i64     ┆ i64    │
    ╞════════════════╪═════╪═════════╪═══════╪═════════╪════════╡
    │ direct         ┆ 2   ┆ 2       ┆ 2     ┆ 1       ┆ 0      │
    │ full_lifecycle ┆ 2   ┆ 2       ┆ 2     ┆ 2       ┆ 2      │
    └────────────────┴─────┴─────────┴───────┴─────────┴────────┘
    """
    require_columns(episodes, {c: EPISODE_COLUMNS[c] for c in ("scenario_id", *FLAG_COLUMNS)})
    tasks = grouped_tasks(episodes, group_by)
    rows = []
    for g in range(tasks.n_groups):
        n = tasks.values(g, "n")
        rows.append(
            {
                GROUP_INDEX: g,
                "n": int(n.sum()),
                "n_tasks": int((n > 0).sum()),
                **{
                    f"{m}_k": int(tasks.values(g, m.plus_flag).sum())
                    for m in Metric
                    if not m.is_gap
                },
            }
        )
    counts = pl.DataFrame(rows, schema_overrides={GROUP_INDEX: pl.Int64})
    return tasks.keys.join(counts, on=GROUP_INDEX).sort(GROUP_INDEX).drop(GROUP_INDEX)


def headline_metrics(
    episodes: pl.DataFrame,
    group_by: Sequence[str] = ("profile",),
    config: BootstrapConfig = DEFAULT_CONFIG,
    *,
    small_n: SmallNMethod = SmallNMethod.WILSON,
    task: str = "scenario_id",
) -> MetricsResult:
    """OSR, PAOSR, CVSR, VG and PAVG per group with task-clustered bootstrap intervals.

    One long row per (group, metric): the estimate, ``k`` and ``n`` (``k`` of a gap is the
    difference of its two counts), the number of tasks, the bootstrap interval (all metrics and
    groups from the same resamples, so VG and PAVG come from the same draw as their parts), and
    for single rates a closed-form ``small_n`` interval on ``k`` of an effective ``n`` (see
    :func:`effective_n`). ``config.stratify_by`` names a task-level column to stratify on.

    >>> frame = pl.DataFrame({
    ...     "scenario_id": [f"s{i}" for i in range(8)],
    ...     "profile": ["direct"] * 8,
    ...     "outcome_success": [True] * 8,
    ...     "policy_aware_outcome_success": [True] * 8,
    ...     "commit_valid_success": [True, False] * 4,
    ... })
    >>> result = headline_metrics(frame, config=BootstrapConfig(n_resamples=1_000, seed=1))
    >>> for row in result.frame.select("metric", "estimate", "k", "n").rows():
    ...     print(row)
    ('OSR', 1.0, 8, 8)
    ('PAOSR', 1.0, 8, 8)
    ('CVSR', 0.5, 4, 8)
    ('VG', 0.5, 4, 8)
    ('PAVG', 0.5, 4, 8)
    >>> osr = result.frame.row(0, named=True)
    >>> osr["ci_low"], osr["ci_high"], round(osr["small_n_low"], 3)
    (1.0, 1.0, 0.676)
    """
    group_by = tuple(group_by)
    require_columns(episodes, {c: EPISODE_COLUMNS[c] for c in (task, *FLAG_COLUMNS)})
    tasks = grouped_tasks(episodes, group_by, task=task, strata=config.stratify_by)
    statistics = [
        NamedStatistic(statistic_name(m, g), metric_statistic(m, g))
        for g in range(tasks.n_groups)
        for m in METRIC_ORDER
    ]
    boot = clustered_bootstrap(tasks.matrix, statistics, config)
    has_error = "error" in episodes.schema
    errors: dict[int, int] = {}
    if has_error:
        counted = (
            episodes.join(
                tasks.keys, on=list(group_by) or None, how="left" if group_by else "cross"
            )
            .group_by(GROUP_INDEX)
            .agg(pl.col("error").is_not_null().sum().alias("e"))
        )
        errors = dict(zip(counted[GROUP_INDEX].to_list(), counted["e"].to_list(), strict=True))
    rows = []
    for g in range(tasks.n_groups):
        n_per_task = tasks.values(g, "n")
        n = int(n_per_task.sum())
        counts = {f: int(tasks.values(g, f).sum()) for f in FLAG_COLUMNS}
        for m in METRIC_ORDER:
            j = boot.position(statistic_name(m, g))
            k = counts[m.plus_flag] - (0 if m.minus_flag is None else counts[m.minus_flag])
            low: float | None = None
            high: float | None = None
            n_eff: float | None = None
            if not m.is_gap:
                n_eff = effective_n(tasks.values(g, m.plus_flag), n_per_task)
                p = k / n if n else 0.0
                interval = binomial_interval(p * n_eff, n_eff, config.level, small_n)
                low, high = interval.low, interval.high
            rows.append(
                {
                    GROUP_INDEX: g,
                    "metric": str(m),
                    "estimate": float(boot.estimate[j]),
                    "k": k,
                    "n": n,
                    "n_tasks": int((n_per_task > 0).sum()),
                    "ci_low": float(boot.low[j]),
                    "ci_high": float(boot.high[j]),
                    "ci_method": str("percentile" if boot.bca_fallback[j] else config.method),
                    "small_n_low": low,
                    "small_n_high": high,
                    "small_n_method": None if m.is_gap else str(small_n),
                    "n_effective": n_eff,
                    "n_errors": errors.get(g, 0) if has_error else None,
                }
            )
    schema = {
        GROUP_INDEX: pl.Int64,
        "metric": pl.String,
        "estimate": pl.Float64,
        "k": pl.Int64,
        "n": pl.Int64,
        "n_tasks": pl.Int64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "ci_method": pl.String,
        "small_n_low": pl.Float64,
        "small_n_high": pl.Float64,
        "small_n_method": pl.String,
        "n_effective": pl.Float64,
        "n_errors": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema)
    frame = (
        tasks.keys.join(frame, on=GROUP_INDEX, how="inner")
        .sort(GROUP_INDEX, maintain_order=True)
        .drop(GROUP_INDEX)
    )
    return MetricsResult(frame=frame, bootstrap=boot, tasks=tasks)
