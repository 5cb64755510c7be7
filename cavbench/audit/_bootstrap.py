"""A small seeded, task-clustered percentile bootstrap for the correction tables.

Episodes of one task are not independent (same task, same difficulty), so the resampling
unit is the task: draw tasks with replacement, pool their episodes, take the rate. The
interval API follows the usual shape (``level``, ``num_resamples``, a cluster key) but the
randomness comes from an explicit seed, never a global generator.

>>> iv = cluster_bootstrap({"a": [1.0, 1.0], "b": [0.0, 0.0]}, seed=0, num_resamples=200)
>>> iv.estimate
0.5
>>> 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cavbench.audit._protocol import AuditError


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    level: float
    num_resamples: int
    clusters: int


def cluster_bootstrap(
    values: Mapping[str, Sequence[float]],
    *,
    seed: int,
    level: float = 0.95,
    num_resamples: int = 2000,
) -> Interval:
    """Mean of all values, with an interval from resampling the clusters (keys).

    Raises :class:`AuditError` for an empty input or a level outside (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise AuditError(f"bootstrap level must be in (0, 1), got {level}")
    keys = [k for k in sorted(values) if len(values[k])]
    if not keys:
        raise AuditError("bootstrap needs at least one cluster with a value")
    sums = np.array([float(np.sum(values[k])) for k in keys])
    counts = np.array([len(values[k]) for k in keys], dtype=float)
    estimate = float(sums.sum() / counts.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(num_resamples, len(keys)))
    rates = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(rates, [alpha, 1.0 - alpha])
    return Interval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        level=level,
        num_resamples=num_resamples,
        clusters=len(keys),
    )
