"""Episodes per second for the five baseline profiles over a large synthesised pack.

The pack is `core-v1` (or --pack) cloned under new ids until it holds --scenarios scenarios.
Prints episodes/s in memory (run + score) and with the run's artifacts written
(`cavbench run`-style directories: traces.jsonl, evaluations.jsonl, summary, manifest),
and the ratio to the CAV-Bench reference measured on this machine (about 7,400 episodes/s in
memory and 2,900/s writing artifacts). Then the peak resident memory (ru_maxrss) of one sweep
cell (`run_cell`: episodes run, scored and written as Parquet tables) of 4k, 40k and 160k
episodes, each in a fresh subprocess: a cell writes its tables in row groups as it goes, so
this should stay flat as the cell grows.

    python benchmarks/episodes.py [--pack core-v1] [--scenarios 4000] [--repeats 3]
                                  [--cells 4000,40000,160000] [--only-speed | --only-cells]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cavbench.adapters import BASELINE_PROFILES, baseline
from cavbench.evaluation import ScoringRule
from cavbench.reports import RunInfo, write_run
from cavbench.runner import run_episodes
from cavbench.scenarios import Scenario, ScenarioPack, load_pack

REFERENCE_IN_MEMORY = 7400.0
REFERENCE_WITH_ARTIFACTS = 2900.0


def synthesise(pack: ScenarioPack, size: int) -> ScenarioPack:
    clones: list[Scenario] = []
    copy = 0
    while len(clones) < size:
        for scenario in pack.scenarios:
            if len(clones) == size:
                break
            clones.append(scenario.model_copy(update={"id": f"{scenario.id}-c{copy:05d}"}))
        copy += 1
    return ScenarioPack(
        pack.pack_id + "-large", pack.pack_version, "", pack.digest, pack.source, tuple(clones)
    )


def run_all(pack: ScenarioPack, out: Path | None) -> int:
    """What `cavbench ablate` does: every profile over the pack, run and scored, then
    (optionally) the run directories written."""
    count = 0
    for profile in BASELINE_PROFILES:
        adapter = baseline(profile)
        episodes = run_episodes(pack, adapter)
        count += len(episodes)
        if out is not None:
            info = RunInfo(
                f"{profile.value}-bench",
                pack,
                adapter.name,
                adapter.version,
                0,
                ScoringRule.V1,
                "bench",
            )
            write_run(out, info, episodes)
    return count


_FORKED_PACK: list[
    ScenarioPack
] = []  # set before forking: workers inherit it instead of unpickling it


def _work(args: tuple[int, int, str | None]) -> int:
    index, jobs, out = args
    pack = _FORKED_PACK[0]
    part = ScenarioPack(
        pack.pack_id, pack.pack_version, "", pack.digest, pack.source, pack.scenarios[index::jobs]
    )
    return run_all(part, Path(out) / str(index) if out else None)


def best_rate(pack: ScenarioPack, repeats: int, write: bool, jobs: int = 1) -> tuple[float, float]:
    """Best wall-clock rate over `repeats`; with `jobs` > 1 the scenarios are split across
    forked worker processes, as a sweep's joblib launcher splits cells."""
    best = float("inf")
    n = 0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            if jobs == 1:
                n = run_all(pack, Path(tmp) if write else None)
            else:
                _FORKED_PACK[:] = [pack]
                ctx = multiprocessing.get_context("fork")
                with ctx.Pool(jobs) as pool:
                    tasks = [(i, jobs, tmp if write else None) for i in range(jobs)]
                    n = sum(pool.map(_work, tasks))
            best = min(best, time.perf_counter() - start)
    return n / best, best / n * 1e6


_CELL = """
import resource, sys
from cavbench.study import compose, run_cell
root, seeds = sys.argv[1], int(sys.argv[2])
result = run_cell(compose([f"output.root={root}", "output.progress=false", "profile=full_lifecycle",
                           f"seeds.count={seeds}"]))
assert result.n_episodes == 40 * seeds, result
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def cell_peak(episodes: int) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one core-v1 cell of `episodes` episodes in a fresh
    process (core-v1 has 40 scenarios: the seed count scales the cell)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _CELL, tmp, str(episodes // 40)],
            check=True,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
    return int(done.stdout.split()[-1]) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pack", default="core-v1")
    parser.add_argument("--scenarios", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes for the parallel figures",
    )
    parser.add_argument("--cells", default="4000,40000,160000", help="cell sizes (episodes)")
    parser.add_argument("--only-speed", action="store_true", help="skip the cell memory figures")
    parser.add_argument("--only-cells", action="store_true", help="only the cell memory figures")
    args = parser.parse_args()
    if not args.only_cells:
        speed(args)
    if not args.only_speed:
        baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"one cell (full_lifecycle, core-v1), peak RSS of its process (this one: {baseline_mb:.0f} MB):"
        )
        for size in (int(n) for n in args.cells.split(",")):
            mb, seconds = cell_peak(size)
            print(
                f"  {size:>7,} episodes: {mb:6.0f} MB  ({seconds:5.1f} s, {size / seconds:,.0f} episodes/s)"
            )


def speed(args: argparse.Namespace) -> None:
    pack = synthesise(load_pack(args.pack), args.scenarios)
    print(
        f"pack: {len(pack)} scenarios x {len(BASELINE_PROFILES)} profiles = {len(pack) * 5} episodes, best of {args.repeats}"
    )
    for label, write in (("in memory", False), ("artifacts written", True)):
        reference = REFERENCE_WITH_ARTIFACTS if write else REFERENCE_IN_MEMORY
        for jobs in sorted({1, args.jobs}):
            rate, us = best_rate(pack, args.repeats, write=write, jobs=jobs)
            print(
                f"{label + ',':<19} {jobs} process{'es' if jobs > 1 else '  '}: {rate:>9,.0f} episodes/s "
                f"({us:6.1f} us each)  {rate / reference:4.1f}x reference"
            )
    # The same work on the pack's own few scenarios, repeated: what a sweep of many seeds over
    # core-v1 does. Faster per episode, since 40 scenario objects stay in the CPU caches.
    small = load_pack(args.pack)
    rounds = max(1, len(pack) // len(small))
    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(rounds):
            run_all(small, None)
        best = min(best, time.perf_counter() - start)
    n = rounds * len(small) * len(BASELINE_PROFILES)
    rate = n / best
    print(
        f"in memory, {len(small)} scenarios repeated x{rounds}, 1 process: {rate:>9,.0f} episodes/s "
        f"({best / n * 1e6:6.1f} us each)  {rate / REFERENCE_IN_MEMORY:4.1f}x reference"
    )


if __name__ == "__main__":
    main()
