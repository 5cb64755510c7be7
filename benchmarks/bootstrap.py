"""Speed and peak memory of the task-clustered bootstrap, against a plain per-resample loop.

The default workload is the issue's: 10,000 resamples over 5,000 tasks x 5 profiles (20
per-task columns: episodes and the three success counts per profile; 25 statistics: OSR,
PAOSR, CVSR, VG and PAVG per profile), percentile and BCa. The loop draws the same task
indices from the same seeded generator, so both give the same intervals (checked below).

    python benchmarks/bootstrap.py [--tasks 5000] [--profiles 5] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np

from analysis import (
    BootstrapConfig,
    IntervalMethod,
    Metric,
    NamedStatistic,
    TaskMatrix,
    clustered_bootstrap,
)
from analysis._bootstrap import evaluate_statistics, percentile_bounds
from analysis._frames import GroupedTasks
from analysis._metrics import metric_statistic

T = TypeVar("T")


def measure(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float, float, float]:
    """Run ``fn`` ``repeat`` times untraced, then once under tracemalloc.

    Returns the result, the median and best untraced seconds, and the peak traced memory in
    MiB (tracing slows allocation, so it is kept out of the timings).
    """
    times = []
    result = fn()
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, float(np.median(times)), min(times), peak / 2**20


def workload(n_tasks: int, n_profiles: int, seed: int) -> tuple[TaskMatrix, list[NamedStatistic]]:
    """A task matrix with 1-5 episodes per task and profile-specific success rates."""
    rng = np.random.default_rng(seed)
    columns, blocks, statistics = [], [], []
    for g in range(n_profiles):
        n = rng.integers(1, 6, size=n_tasks).astype(float)
        p = rng.beta(2 + g, 2, size=n_tasks)
        outcome = rng.binomial(n.astype(int), np.minimum(1.0, p + 0.1)).astype(float)
        policy = np.minimum(outcome, rng.binomial(n.astype(int), p).astype(float))
        valid = np.minimum(policy, rng.binomial(n.astype(int), p * 0.8).astype(float))
        for name, values in (
            ("n", n),
            ("outcome_success", outcome),
            ("policy_aware_outcome_success", policy),
            ("commit_valid_success", valid),
        ):
            columns.append(GroupedTasks.column(g, name))
            blocks.append(values)
        statistics += [NamedStatistic(f"{g}:{m}", metric_statistic(m, g)) for m in Metric]
    tasks = tuple(f"task-{i:05d}" for i in range(n_tasks))
    return TaskMatrix(tasks, tuple(columns), np.column_stack(blocks)), statistics


def plain_loop(
    matrix: TaskMatrix, statistics: list[NamedStatistic], config: BootstrapConfig
) -> tuple[np.ndarray, np.ndarray]:
    """One resample at a time: draw task indices, sum the drawn rows, evaluate, repeat."""
    rng = np.random.default_rng(config.seed)
    replicates = np.empty((config.n_resamples, len(statistics)))
    for b in range(config.n_resamples):
        drawn = rng.integers(0, matrix.n_tasks, size=matrix.n_tasks, dtype=np.int64)
        totals = matrix.values[drawn].sum(axis=0)
        replicates[b] = evaluate_statistics(statistics, matrix, totals)
    bounds = [percentile_bounds(replicates[:, j], config.level) for j in range(len(statistics))]
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--profiles", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per method")
    parser.add_argument("--skip-loop", action="store_true", help="skip the slow baseline")
    args = parser.parse_args()

    matrix, statistics = workload(args.tasks, args.profiles, args.seed)
    print(
        f"workload: {args.resamples:,} resamples x {args.tasks:,} tasks x {args.profiles} "
        f"profiles ({len(matrix.columns)} per-task columns, {len(statistics)} statistics)"
    )
    results = {}
    for method in (IntervalMethod.PERCENTILE, IntervalMethod.BCA):
        config = BootstrapConfig(n_resamples=args.resamples, seed=args.seed, method=method)
        result, median, best, peak = measure(
            partial(clustered_bootstrap, matrix, statistics, config), args.repeat
        )
        results[method] = (result, median)
        print(
            f"weights matrix, {method:<10}: {median:7.3f} s (median of {args.repeat}, "
            f"best {best:.3f} s)   peak {peak:7.1f} MiB"
        )
    if args.skip_loop:
        return
    config = BootstrapConfig(n_resamples=args.resamples, seed=args.seed)
    (low, high), seconds, _, peak = measure(partial(plain_loop, matrix, statistics, config))
    print(
        f"plain loop,     percentile: {seconds:7.3f} s (one run)               peak {peak:7.1f} MiB"
    )
    fast, fast_seconds = results[IntervalMethod.PERCENTILE]
    difference = max(np.max(np.abs(fast.low - low)), np.max(np.abs(fast.high - high)))
    print(f"speed-up of the weights matrix (percentile, medians): {seconds / fast_seconds:.1f}x")
    print(f"largest difference between the two methods' interval bounds: {difference:.2e}")


if __name__ == "__main__":
    main()
