"""Interval calibration, full version: coverage of 95% intervals under task heterogeneity.

Each setting simulates many studies (tasks drawn with Beta-distributed success
probabilities, several episodes per task) and counts how often each interval covers the
true rate. The task-clustered bootstrap should sit near 95%; the naive episode-level
intervals fall short as the within-task correlation grows. (The small version of this
check runs in the test suite: tests/analysis/test_calibration.py.)

    python benchmarks/calibration.py [--replications 2000] [--resamples 2000]
"""

from __future__ import annotations

import argparse
import time

from analysis import CalibrationMethod, CalibrationSetup, run_calibration

SETTINGS: tuple[tuple[int, int, float, float], ...] = (
    # (tasks, repetitions, mean rate, concentration); ICC = 1 / (concentration + 1)
    (40, 1, 0.7, 2.0),
    (40, 5, 0.7, 2.0),
    (40, 5, 0.7, 10.0),
    (40, 10, 0.5, 1.0),
    (100, 5, 0.9, 2.0),
    (20, 5, 0.7, 2.0),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=2_000)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    methods = list(CalibrationMethod)
    header = f"{'tasks':>5} {'reps':>4} {'rate':>4} {'ICC':>5} | " + " | ".join(
        f"{m.value:>23}" for m in methods
    )
    print(f"coverage of nominal 95% intervals (mean width), {args.replications} replications")
    print(header)
    print("-" * len(header))
    for tasks, reps, rate, concentration in SETTINGS:
        setup = CalibrationSetup(
            n_tasks=tasks,
            repetitions=reps,
            mean_rate=rate,
            concentration=concentration,
            replications=args.replications,
            n_resamples=args.resamples,
            seed=args.seed,
        )
        start = time.perf_counter()
        result = run_calibration(setup)
        cells = [
            f"{e.coverage:6.3f} ±{e.monte_carlo_error:.3f} ({e.mean_width:.3f})"
            for e in (result.estimate(m) for m in methods)
        ]
        print(
            f"{tasks:>5} {reps:>4} {rate:>4} {setup.intraclass_correlation:5.2f} | "
            + " | ".join(f"{c:>23}" for c in cells)
            + f"   [{time.perf_counter() - start:.1f} s]"
        )


if __name__ == "__main__":
    main()
