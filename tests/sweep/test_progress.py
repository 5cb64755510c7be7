"""Sweep-level progress: the job count, the finished cells, one line within 80 columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from cavbench.study import run_cell
from cavbench.study._progress import (
    PROGRESS_LOG,
    SweepCounts,
    SweepProgress,
    count_jobs,
    progress_line,
    report,
)

Config = Callable[..., DictConfig]


def _multirun(params: dict[str, str], task: list[str]) -> DictConfig:
    return OmegaConf.create({"hydra": {"sweeper": {"params": params}, "overrides": {"task": task}}})


def test_count_jobs_multiplies_the_swept_values() -> None:
    assert count_jobs(_multirun({}, ["scenarios=mock", "seeds.start=0,1,2"])) == 3
    assert count_jobs(_multirun({"profile": "direct,reconciled"}, ["seeds.start=0,1,2"])) == 6
    assert count_jobs(_multirun({}, ["profile=glob(*)"])) == 5
    assert count_jobs(OmegaConf.create({"hydra": {}})) is None


def test_the_line_fits_80_columns_even_for_huge_sweeps() -> None:
    line = progress_line(SweepCounts(123_456, 98_765_432_100), 999_999, 86_400.0)
    assert len(line) <= 80
    assert line.startswith("sweep 123456/999999 cells | ")
    assert "ep/s" in line
    assert "ETA" in line
    assert progress_line(SweepCounts(1, 5), None, 2.0) == (
        "sweep 1/? cells | 5 episodes | 2.5 ep/s"
    )


def test_jobs_report_the_cells_done_in_this_multirun(
    config: Config, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config("profile=direct")
    sweep = Path(str(cfg.output.root)) / "default"
    sweep.mkdir(parents=True)
    (sweep / PROGRESS_LOG).write_text("40\n40\n")  # an earlier multirun's cells
    multirun = _multirun({}, ["profile=direct,reconciled"])
    multirun.output = {"progress": True}
    multirun.hydra.sweep = {"dir": str(sweep)}
    for name in ("TOTAL", "T0", "LINE0", "QUIET"):
        monkeypatch.setenv(f"CAVBENCH_SWEEP_{name}", "")  # restored (unset) after the test
        monkeypatch.delenv(f"CAVBENCH_SWEEP_{name}")
    SweepProgress().on_multirun_start(multirun)
    result = run_cell(cfg)
    report(sweep, result.n_episodes)
    err = capsys.readouterr().err
    assert err.startswith("sweep 1/2 cells | 5 episodes | ")
    assert "ETA" in err
    report(sweep, 0)  # a skipped cell counts as done, with no episodes
    assert capsys.readouterr().err.startswith("sweep 2/2 cells | 5 episodes | ")
    assert (sweep / PROGRESS_LOG).read_text() == "40\n40\n5\n0\n"
    monkeypatch.setenv("CAVBENCH_SWEEP_QUIET", "1")
    report(sweep, 5)
    assert capsys.readouterr().err == ""
