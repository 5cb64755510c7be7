"""The study path in-process (fast): the ablation, collect, recompute, an interrupted sweep."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from omegaconf import DictConfig

from cavbench.adapters import Profile
from cavbench.study import CellPlan, _job, compose, run_cell
from cavbench.tables import (
    CellStatus,
    Table,
    cell_dirs,
    collect,
    read_cell_manifest,
    recompute,
)

HEADLINE = {
    "direct": (37, 30, 10),
    "policy_gated": (40, 40, 20),
    "commit_guarded": (40, 40, 30),
    "reconciled": (40, 40, 35),
    "full_lifecycle": (40, 40, 40),
}


def _ablation(root: Path) -> Iterator[DictConfig]:
    for profile in Profile:
        yield compose(
            [
                "experiment=ablation",
                f"profile={profile.value}",
                f"output.root={root}",
                "output.progress=false",
            ]
        )


def _checksums(sweep: Path) -> dict[str, dict[str, str]]:
    return {
        read_cell_manifest(d).cell: {n: r.sha256 for n, r in read_cell_manifest(d).tables.items()}
        for d in cell_dirs(sweep)
    }


def test_the_ablation_gives_the_headline_counts(tmp_path: Path) -> None:
    for cfg in _ablation(tmp_path):
        run_cell(cfg)
    sweep = tmp_path / "ablation"
    result = collect(sweep)
    assert result.manifest.n_cells == 5
    assert result.manifest.n_episodes == 200
    merged = pl.read_parquet(sweep / "collected" / "episodes.parquet")
    counts = merged.group_by("profile").agg(
        pl.col("outcome_success").sum(),
        pl.col("policy_aware_outcome_success").sum(),
        pl.col("commit_valid_success").sum(),
    )
    assert {r[0]: tuple(r[1:]) for r in counts.iter_rows()} == HEADLINE
    report = recompute(sweep)
    assert report.ok
    assert report.n_episodes == 200
    assert report.n_cells == 5
    strict = recompute(sweep, rule="v1_strict")
    assert not strict.ok  # v1_strict sees stale commits v1 does not look for
    assert {d.field for d in strict.differences} >= {"dimension:temporal_state_validity"}


def test_a_contaminating_adapter_first_leaves_the_headline_unchanged(tmp_path: Path) -> None:
    # Issue 9: it empties the plan's writes with dict.clear and the faults through private
    # attributes, in the same process and on the same cached pack as the baselines after it.
    run_cell(
        compose(
            [
                "experiment=ablation",
                "profile=direct",
                "adapter.name=contaminating",
                "adapter.factory._target_=tests.sweep.adapters.contaminating",
                f"output.root={tmp_path}",
                "output.progress=false",
            ]
        )
    )
    for cfg in _ablation(tmp_path):
        run_cell(cfg)
    sweep = tmp_path / "ablation"
    episodes = pl.concat(
        [pl.read_parquet(d / "episodes.parquet") for d in cell_dirs(sweep)], how="vertical"
    )
    baselines = episodes.filter(pl.col("adapter") == "baseline")
    counts = baselines.group_by("profile").agg(
        pl.col("outcome_success").sum(),
        pl.col("policy_aware_outcome_success").sum(),
        pl.col("commit_valid_success").sum(),
    )
    assert {r[0]: tuple(r[1:]) for r in counts.iter_rows()} == HEADLINE
    flagged = {d.cell for d in recompute(sweep).differences if d.field == "scenario_digest"}
    assert flagged == {c for c in episodes["cell"].unique() if "contaminating" in c}


def _run_all(configs: list[DictConfig]) -> None:
    for cfg in configs:
        run_cell(cfg)


class _Killed(BaseException):
    """Stands in for SIGKILL: not an Exception, so the job cannot record a failure."""


@pytest.mark.slow  # eight cells; the fast suite keeps the skip of a complete cell
# (tests/sweep/test_job.py::test_a_complete_cell_is_skipped_on_the_second_run)
def test_an_interrupted_sweep_resumes_to_the_same_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = list(_ablation(tmp_path / "run"))
    real_write = _job.open_table_writer
    calls = {"n": 0}

    def dying_write(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2 * len(Table) + 3:  # two cells done, the third dies after two tables
            raise _Killed
        return real_write(*args, **kwargs)

    monkeypatch.setattr("cavbench.study._job.open_table_writer", dying_write)
    with pytest.raises(_Killed):
        _run_all(configs)
    monkeypatch.setattr("cavbench.study._job.open_table_writer", real_write)
    sweep = tmp_path / "run" / "ablation"
    statuses = sorted(read_cell_manifest(d).status.value for d in cell_dirs(sweep))
    assert statuses == ["COMPLETE", "COMPLETE", "RUNNING"]
    with pytest.raises(Exception, match="not complete"):
        collect(sweep)

    results = [run_cell(cfg) for cfg in configs]
    assert [r.skipped for r in results] == [True, True, False, False, False]
    for cfg in _ablation(tmp_path / "reference"):
        run_cell(cfg)
    assert _checksums(sweep) == _checksums(tmp_path / "reference" / "ablation")


def test_compose_and_plan_agree_on_the_folder(tmp_path: Path) -> None:
    cfg = compose([f"output.root={tmp_path}", "profile=direct"])
    plan = CellPlan.from_config(cfg)
    assert plan.cell_dir == tmp_path / "default" / plan.cell
    assert run_cell(cfg).directory == str(plan.cell_dir)
    assert read_cell_manifest(plan.cell_dir).status is CellStatus.COMPLETE
