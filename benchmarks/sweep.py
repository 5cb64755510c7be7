"""End-to-end sweep throughput and memory: config -> episodes -> Parquet tables.

Runs `python -m cavbench.sweep -m …` in a temporary folder, as a user would, and prints:

* episodes per second for a sweep of 20,000 episodes (10 cells of 2,000: five profiles x
  core-v1 x two seed blocks of 50), serially and with the joblib launcher on 2 workers;
* peak memory: the largest resident set of any one process, and of the whole process tree
  (sampled every 50 ms from /proc);
* sweeps of 2, 5 and 10 such cells, serially, to show that memory stays flat as the sweep
  grows (every cell writes its own tables; nothing accumulates sweep-wide);
* one job (one cell) alone, for the per-job peak;
* `cavbench collect` and `cavbench recompute` on the 20,000-episode sweep.

    python benchmarks/sweep.py            # the full run (a few minutes on 2 cores)
    python benchmarks/sweep.py --quick    # 1/10 of the size, for a smoke check
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
PROFILES = "direct,policy_gated,commit_guarded,reconciled,full_lifecycle"
SCENARIOS = 40  # core-v1


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_tree_mb: float
    peak_process_mb: float


def _tree_rss(root: int) -> tuple[int, int]:
    """(sum, max) resident bytes of `root` and all its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/statm", "rb") as handle:
                pages = int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = pages * PAGE
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in members and pid not in members:
                members.add(pid)
                grew = True
    sizes = [rss.get(pid, 0) for pid in members]
    return sum(sizes), max(sizes, default=0)


def run(args: list[str], cwd: Path) -> Measured:
    """Run a command, sampling the memory of its process tree until it exits."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peaks = [0, 0]

    def sample() -> None:
        while proc.poll() is None:
            total, largest = _tree_rss(proc.pid)
            peaks[0] = max(peaks[0], total)
            peaks[1] = max(peaks[1], largest)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(args)}\n{err.decode()[-3000:]}")
    return Measured(seconds, peaks[0] / 2**20, peaks[1] / 2**20)


def sweep_args(
    name: str, profiles: str, blocks: int, seeds_per_block: int, launcher: str | None = None
) -> list[str]:
    starts = ",".join(str(b * seeds_per_block) for b in range(blocks))
    args = [
        sys.executable,
        "-m",
        "cavbench.sweep",
        "-m",
        f"profile={profiles}",
        "scenarios=core-v1",
        f"seeds.start={starts}",
        f"seeds.count={seeds_per_block}",
        f"output.name={name}",
        "output.progress=false",
    ]
    if launcher == "joblib":
        args += ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    return args


def line(label: str, episodes: int, m: Measured) -> None:
    print(
        f"{label:<34} {episodes:>7} episodes {m.seconds:8.1f} s {episodes / m.seconds:8.0f} ep/s  "
        f"peak RSS: tree {m.peak_tree_mb:7.0f} MB, largest process {m.peak_process_mb:6.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the size")
    parser.add_argument("--skip-growth", action="store_true", help="skip the growth series")
    options = parser.parse_args()
    seeds_per_block = 5 if options.quick else 50
    blocks = 2
    cell = SCENARIOS * seeds_per_block
    full = len(PROFILES.split(",")) * blocks * cell
    print(
        f"cells of {cell} episodes (core-v1 x {seeds_per_block} seeds); cores: {os.cpu_count()}; "
        f"load average before: {os.getloadavg()[0]:.2f} (other work on the machine slows this)"
    )
    with tempfile.TemporaryDirectory(prefix="cavbench-bench-") as tmp:
        work = Path(tmp)
        one = [
            sys.executable,
            "-m",
            "cavbench.sweep",
            "profile=direct",
            f"seeds.count={seeds_per_block}",
            "output.name=one",
            "output.progress=false",
        ]
        line("one job (one cell), serial", cell, run(one, work))
        if not options.skip_growth:  # same cell size, more cells: memory must not grow
            line(
                "sweep of 2 cells, serial",
                2 * cell,
                run(sweep_args("two", "direct", 2, seeds_per_block), work),
            )
            line(
                "sweep of 5 cells, serial",
                5 * cell,
                run(sweep_args("five", PROFILES, 1, seeds_per_block), work),
            )
        serial = run(sweep_args("serial", PROFILES, blocks, seeds_per_block), work)
        line("sweep of 10 cells, serial", full, serial)
        joblib = run(sweep_args("joblib", PROFILES, blocks, seeds_per_block, "joblib"), work)
        line("sweep of 10 cells, joblib n_jobs=2", full, joblib)
        print(f"joblib speed-up over serial: {serial.seconds / joblib.seconds:.2f}x")
        collect = run([sys.executable, "-m", "cavbench.cli", "collect", "sweeps/serial"], work)
        line("cavbench collect (full sweep)", full, collect)
        recompute = run([sys.executable, "-m", "cavbench.cli", "recompute", "sweeps/serial"], work)
        line("cavbench recompute (full sweep)", full, recompute)
        size = sum(p.stat().st_size for p in (work / "sweeps" / "serial").rglob("*.parquet"))
        print(f"Parquet on disk for the full sweep (cells + collected): {size / 2**20:.1f} MB")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
