"""Sweep-level progress: cells done of the total, episodes per second, time left.

A Hydra callback (`hydra.callbacks.progress` in `conf/config.yaml`) counts the sweep's jobs
when the multirun starts and hands the count to the jobs through the environment (the
launchers pass it on to their workers). Each job, when its cell is done (run or skipped),
appends one line to `<sweep>/.progress.log` (an O_APPEND write of a few bytes, so jobs in
other processes or on other nodes of a shared file system never interleave) and prints one
short line to stderr, at most 80 columns, counting the lines this multirun appended:

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

ENV_PREFIX = "CAVBENCH_SWEEP_"
WIDTH = 80


PROGRESS_LOG = ".progress.log"


@dataclass(frozen=True, slots=True)
class SweepCounts:
    """Cells done in this multirun (run or skipped) and the episodes they ran."""

    cells: int
    episodes: int


def _log_lines(sweep_dir: Path) -> list[str]:
    try:
        return (sweep_dir / PROGRESS_LOG).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def append_done(sweep_dir: Path, n_episodes: int) -> None:
    """Record one finished cell (`n_episodes` it ran; 0 when skipped)."""
    fd = os.open(sweep_dir / PROGRESS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{n_episodes}\n".encode())
    finally:
        os.close(fd)


def done_since(sweep_dir: Path, first_line: int) -> SweepCounts:
    """The cells recorded after line `first_line` of the progress log."""
    lines = _log_lines(sweep_dir)[first_line:]
    return SweepCounts(len(lines), sum(int(x) for x in lines if x.strip().isdigit()))


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def progress_line(done: SweepCounts, total: int | None, elapsed: float) -> str:
    """One line, at most 80 columns.

    >>> progress_line(SweepCounts(3, 120), 5, 1.5)
    'sweep 3/5 cells | 120 episodes | 80.0 ep/s | ETA 0:00:01'
    """
    rate = done.episodes / elapsed if elapsed > 0 else 0.0
    parts = [f"sweep {done.cells}/{total if total else '?'} cells", f"{done.episodes} episodes"]
    parts.append(f"{rate:.1f} ep/s")
    if total and done.cells > 0:
        parts.append(f"ETA {_clock(elapsed / done.cells * max(0, total - done.cells))}")
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
    """Hydra callback: counts the sweep's jobs when a multirun starts."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not bool(config.output.progress):
            os.environ[ENV_PREFIX + "QUIET"] = "1"
            return
        os.environ.pop(ENV_PREFIX + "QUIET", None)
        os.environ[ENV_PREFIX + "TOTAL"] = str(count_jobs(config) or 0)
        os.environ[ENV_PREFIX + "T0"] = repr(time.time())
        os.environ[ENV_PREFIX + "LINE0"] = str(len(_log_lines(Path(str(config.hydra.sweep.dir)))))


def report(sweep_dir: Path, n_episodes: int) -> None:
    """Record a finished cell and print the sweep's progress line (in a job of a multirun
    that the callback started; elsewhere, nothing)."""
    if ENV_PREFIX + "T0" not in os.environ or os.environ.get(ENV_PREFIX + "QUIET"):
        return
    try:
        total = int(os.environ.get(ENV_PREFIX + "TOTAL", "0")) or None
        first_line = int(os.environ.get(ENV_PREFIX + "LINE0", "0"))
        elapsed = time.time() - float(os.environ[ENV_PREFIX + "T0"])
        append_done(sweep_dir, n_episodes)
    except (ValueError, OSError):
        return
    line = progress_line(done_since(sweep_dir, first_line), total, elapsed)
    print(line, file=sys.stderr, flush=True)
