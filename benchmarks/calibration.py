"""Interval calibration, full version: coverage of 95% intervals and type-I error of the tests.

Part 1 (single rates): each setting simulates many studies (tasks drawn with Beta-distributed
success probabilities, several episodes per task) and counts how often each interval covers
the true rate. The task-clustered intervals should sit near 95%; the naive episode-level
intervals fall short as the within-task correlation grows.

Part 2 (paired contrasts): two profiles share each task's difficulty; the second is shifted
on the logit scale by ``effect``. Coverage of the paired-difference intervals, and how often
McNemar and the permutation test reject at 5% (with effect 0: their type-I error).

Every setting runs once per seed (``--seeds``, at least four by default); the table shows the
coverage pooled over seeds with its Monte Carlo standard error, and the per-seed range, so a
reader can see how much one seed's number moves. (A small version of this check runs in the
test suite: tests/analysis/test_calibration.py.)

    python benchmarks/calibration.py [--replications 1000] [--resamples 1000] [--seeds 0 1 2 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from analysis import (
    CalibrationSetup,
    PooledEstimate,
    over_seeds,
    run_calibration,
    run_paired_calibration,
)

SINGLE: tuple[tuple[int, int, float, float], ...] = (
    # (tasks, repetitions, mean rate, concentration); ICC = 1 / (concentration + 1)
    (10, 5, 0.7, 2.0),
    (20, 5, 0.7, 2.0),
    (40, 5, 0.7, 2.0),
    (100, 5, 0.7, 2.0),
    (40, 1, 0.7, 2.0),
    (40, 10, 0.5, 1.0),
    (100, 5, 0.9, 2.0),
)
PAIRED: tuple[tuple[int, int, float], ...] = (
    # (tasks, repetitions, logit effect); mean rate 0.7, concentration 2
    (10, 1, 0.0),
    (20, 1, 0.0),
    (40, 1, 0.0),
    (100, 1, 0.0),
    (10, 5, 0.0),
    (20, 5, 0.0),
    (40, 5, 0.0),
    (100, 5, 0.0),
    (10, 1, 1.0),
    (20, 1, 1.0),
    (40, 1, 1.0),
    (100, 1, 1.0),
)


def _cell(estimate: PooledEstimate) -> str:
    low, high = min(estimate.per_seed), max(estimate.per_seed)
    return f"{estimate.value:.3f} ±{estimate.monte_carlo_error:.3f} [{low:.3f}-{high:.3f}]"


def _table(header: Sequence[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1_000, help="per seed and setting")
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--part", choices=["single", "paired", "both"], default="both")
    args = parser.parse_args()
    seeds = list(args.seeds)
    print(
        f"{args.replications} replications x {len(seeds)} seeds {seeds} per setting, "
        f"{args.resamples} resamples; cells: pooled ±MC s.e. [per-seed min-max]\n"
    )
    if args.part in ("single", "both"):
        print("Single rates: coverage of nominal 95% intervals\n")
        rows: list[list[str]] = []
        header: list[str] = []
        for tasks, reps, rate, concentration in SINGLE:
            setup = CalibrationSetup(
                n_tasks=tasks,
                repetitions=reps,
                mean_rate=rate,
                concentration=concentration,
                replications=args.replications,
                n_resamples=args.resamples,
            )
            start = time.perf_counter()
            pooled = over_seeds(run_calibration, setup, seeds)
            header = ["T x reps, rate, ICC", *(p.name for p in pooled), "time"]
            rows.append(
                [
                    f"{tasks} x {reps}, {rate}, {setup.intraclass_correlation:.2f}",
                    *(_cell(p) for p in pooled),
                    f"{time.perf_counter() - start:.0f} s",
                ]
            )
        _table(header, rows)
    if args.part in ("paired", "both"):
        print(
            "Paired contrasts: coverage of the 95% paired-difference interval; rejection rate "
            "at 5% (type-I error when the effect is 0)\n"
        )
        rows = []
        header = []
        for tasks, reps, effect in PAIRED:
            setup = CalibrationSetup(
                n_tasks=tasks,
                repetitions=reps,
                effect=effect,
                replications=args.replications,
                n_resamples=args.resamples,
            )
            start = time.perf_counter()
            pooled = over_seeds(run_paired_calibration, setup, seeds)
            header = ["T x reps, logit effect", *(p.name for p in pooled), "time"]
            rows.append(
                [
                    f"{tasks} x {reps}, {effect}",
                    *(_cell(p) for p in pooled),
                    f"{time.perf_counter() - start:.0f} s",
                ]
            )
        _table(header, rows)


if __name__ == "__main__":
    main()
