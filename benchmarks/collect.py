"""Peak memory of `cavbench collect` on sweeps of 40k and 600k episodes.

Builds two sweeps of core-v1 cells of 40,000 episodes each (40 scenarios x 1,000 seeds): one
cell, and fifteen (five profiles x three seed blocks) = 600,000 episodes. Then runs
`collect` on each in a fresh subprocess and prints its peak resident memory (ru_maxrss) and
time. Collect streams every cell in batches of rows and computes the checksums as the rows
go, so its memory should not grow with the sweep. Building the large sweep takes a few
minutes on 2 cores; --keep DIR reuses (or keeps) the sweeps in DIR.

    python benchmarks/collect.py [--keep /tmp/collect-bench]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROFILES = ("direct", "policy_gated", "commit_guarded", "reconciled", "full_lifecycle")
SEEDS_PER_CELL = 1000  # x 40 core-v1 scenarios = 40,000 episodes a cell

_CELL = """
import sys
from cavbench.study import compose, run_cell
root, name, profile, start = sys.argv[1:5]
run_cell(compose([f"output.root={root}", f"output.name={name}", "output.progress=false",
                  f"profile={profile}", f"seeds.start={start}", f"seeds.count={SEEDS}"]))
""".replace("SEEDS", str(SEEDS_PER_CELL))

_COLLECT = """
import resource, sys
from pathlib import Path
from cavbench.tables import collect
result = collect(Path(sys.argv[1]), Path(sys.argv[2]))
print(result.manifest.n_episodes, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def build(root: Path, name: str, cells: list[tuple[str, int]]) -> None:
    """Run the cells (a complete cell is skipped, so a kept sweep is reused)."""
    for profile, block in cells:
        start = block * SEEDS_PER_CELL
        subprocess.run(
            [sys.executable, "-c", _CELL, str(root), name, profile, str(start)],
            check=True,
            capture_output=True,
        )


def measure(sweep: Path, out: Path) -> tuple[int, float, float]:
    """(episodes, peak RSS in MB, seconds) of `collect` in a fresh process."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, str(sweep), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    episodes, kilobytes = done.stdout.split()[-2:]
    return int(episodes), int(kilobytes) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, default=None, help="build/reuse the sweeps here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        sweeps = {
            "small": [("direct", 0)],
            "large": [(p, block) for block in range(3) for p in PROFILES],
        }
        for name, cells in sweeps.items():
            started = time.perf_counter()
            build(root, name, cells)
            built = time.perf_counter() - started
            episodes, mb, seconds = measure(root / name, Path(tmp) / f"collected-{name}")
            print(
                f"collect, {len(cells):>2} cells, {episodes:>7,} episodes: peak RSS {mb:5.0f} MB, "
                f"{seconds:5.1f} s   (sweep built/checked in {built:.0f} s)"
            )


if __name__ == "__main__":
    main()
