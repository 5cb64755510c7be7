"""Sweep-level progress: cells done of the total, episodes per second, time left.

A Hydra callback (`hydra.callbacks.progress` in `conf/config.yaml`) counts the sweep's cells
when the multirun starts and hands the count to the jobs through the environment (the
launchers pass it on to their workers). After each cell, the job that ran it counts the
finished cells in the sweep folder (so it works whichever process or node ran them) and
prints one short line to stderr, at most 80 columns:

    sweep 3/5 cells | 120 episodes | 85.2 ep/s | ETA 0:00:02

`output.progress=false` turns it off (and the per-cell episode bar), for CI logs. Timing is
shown, never recorded: nothing here reaches a table or a manifest.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from cavbench.tables import CellStatus, cell_dirs, read_cell_manifest

ENV_PREFIX = "CAVBENCH_SWEEP_"
WIDTH = 80


@dataclass(frozen=True, slots=True)
class SweepCounts:
    """Finished cells (complete or failed) in a sweep folder and their episodes."""

    cells: int
    episodes: int


def finished(sweep_dir: Path) -> SweepCounts:
    """Count the finished cells of a sweep folder (unreadable manifests count as not done)."""
    cells = episodes = 0
    for directory in cell_dirs(sweep_dir):
        try:
            manifest = read_cell_manifest(directory)
        except Exception:
            continue
        if manifest.status in (CellStatus.COMPLETE, CellStatus.FAILED):
            cells += 1
            episodes += manifest.n_episodes
    return SweepCounts(cells, episodes)


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def progress_line(done: SweepCounts, start: SweepCounts, total: int | None, elapsed: float) -> str:
    """One line, at most 80 columns.

    >>> progress_line(SweepCounts(3, 120), SweepCounts(0, 0), 5, 1.5)
    'sweep 3/5 cells | 120 episodes | 80.0 ep/s | ETA 0:00:01'
    """
    ran_cells = done.cells - start.cells
    rate = (done.episodes - start.episodes) / elapsed if elapsed > 0 else 0.0
    parts = [f"sweep {done.cells}/{total if total else '?'} cells", f"{done.episodes} episodes"]
    parts.append(f"{rate:.1f} ep/s")
    if total and ran_cells > 0:
        parts.append(f"ETA {_clock(elapsed / ran_cells * max(0, total - done.cells))}")
    return " | ".join(parts)[:WIDTH]


def count_jobs(config: DictConfig) -> int | None:
    """How many jobs this multirun launches (the basic sweeper's product of the swept
    values), or None when that cannot be worked out here (another sweeper, a group glob
    over a user's config directory)."""
    try:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra._internal.utils import create_config_search_path
        from hydra.core.override_parser.overrides_parser import OverridesParser

        from cavbench.study._config import config_dir

        hydra_node = config.hydra
        params = hydra_node.sweeper.get("params") or {}
        arguments = [f"{key}={value}" for key, value in params.items()]
        arguments += list(hydra_node.overrides.task)
        loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(config_dir())))
        overrides = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
        batches = BasicSweeper.split_arguments(overrides, None)
        return sum(len(batch) for batch in batches)
    except Exception:
        return None


class SweepProgress(Callback):
    """Hydra callback: counts the sweep's jobs and finished cells when a multirun starts."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not bool(config.output.progress):
            os.environ[ENV_PREFIX + "QUIET"] = "1"
            return
        total = count_jobs(config)
        start = finished(Path(str(config.hydra.sweep.dir)))
        os.environ[ENV_PREFIX + "TOTAL"] = str(total or 0)
        os.environ[ENV_PREFIX + "T0"] = repr(time.time())
        os.environ[ENV_PREFIX + "CELLS0"] = str(start.cells)
        os.environ[ENV_PREFIX + "EPISODES0"] = str(start.episodes)


def report(sweep_dir: Path) -> None:
    """Print the sweep's progress line (in a job of a multirun that the callback started)."""
    if ENV_PREFIX + "T0" not in os.environ or os.environ.get(ENV_PREFIX + "QUIET"):
        return
    try:
        total = int(os.environ.get(ENV_PREFIX + "TOTAL", "0")) or None
        start = SweepCounts(
            int(os.environ.get(ENV_PREFIX + "CELLS0", "0")),
            int(os.environ.get(ENV_PREFIX + "EPISODES0", "0")),
        )
        elapsed = time.time() - float(os.environ[ENV_PREFIX + "T0"])
    except ValueError:
        return
    print(progress_line(finished(sweep_dir), start, total, elapsed), file=sys.stderr, flush=True)
