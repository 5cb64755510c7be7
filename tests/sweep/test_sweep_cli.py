"""`python -m cavbench.sweep` end to end: the ablation, joblib, a sweep killed with SIGKILL.

These start Python processes, so they are marked slow; `.ci/ray-step.sh` runs them. Their
in-process counterparts in `test_study.py` run with the fast suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from cavbench.cli import main as cavbench_main
from cavbench.tables import CellStatus, cell_dirs, read_cell_manifest

from .conftest import REPO, run_sweep

pytestmark = pytest.mark.slow

HEADLINE = {  # profile: (OSR, PAOSR, CVSR) successes out of 40
    "direct": (37, 30, 10),
    "policy_gated": (40, 40, 20),
    "commit_guarded": (40, 40, 30),
    "reconciled": (40, 40, 35),
    "full_lifecycle": (40, 40, 40),
}


def _rates(frame: pl.DataFrame) -> dict[str, tuple[int, int, int]]:
    counts = frame.group_by("profile").agg(
        pl.col("outcome_success").sum(),
        pl.col("policy_aware_outcome_success").sum(),
        pl.col("commit_valid_success").sum(),
        pl.len(),
    )
    assert set(counts["len"].to_list()) == {40}
    return {
        row[0]: (int(row[1]), int(row[2]), int(row[3]))
        for row in counts.select(
            "profile",
            "outcome_success",
            "policy_aware_outcome_success",
            "commit_valid_success",
        ).iter_rows()
    }


def _table_checksums(sweep: Path) -> dict[str, dict[str, str]]:
    out = {}
    for directory in cell_dirs(sweep):
        manifest = read_cell_manifest(directory)
        assert manifest.status is CellStatus.COMPLETE
        out[manifest.cell] = {name: r.sha256 for name, r in manifest.tables.items()}
    return out


def test_ablation_writes_the_headline_table_and_recomputes_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_sweep(["-m", "experiment=ablation", "output.progress=false"], tmp_path)
    assert done.returncode == 0, done.stderr
    sweep = tmp_path / "sweeps" / "ablation"
    assert len(cell_dirs(sweep)) == 5
    scanned = pl.scan_parquet(
        sweep / "profile=*" / "**" / "episodes.parquet", hive_partitioning=True
    ).collect()
    assert scanned.height == 200
    assert _rates(scanned) == HEADLINE

    assert cavbench_main(["collect", str(sweep)]) == 0
    merged = pl.read_parquet(sweep / "collected" / "episodes.parquet")
    assert merged.height == 200
    assert merged["episode_id"].n_unique() == 200
    assert _rates(merged) == HEADLINE
    verdicts = pl.read_parquet(sweep / "collected" / "verdicts.parquet")
    assert verdicts.height == 1000
    assert set(verdicts.columns) >= {
        "episode_id",
        "scenario_id",
        "profile",
        "dimension",
        "status",
        "cell",
        "seeds",
    }

    capsys.readouterr()
    assert cavbench_main(["recompute", str(sweep)]) == 0
    assert "recomputed 200 episodes in 5 cells" in capsys.readouterr().out
    assert cavbench_main(["recompute", str(sweep / "collected")]) == 0

    again = run_sweep(["-m", "experiment=ablation", "output.root=again"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert _table_checksums(tmp_path / "again" / "ablation") == _table_checksums(sweep)


def test_a_multirun_under_the_joblib_launcher(tmp_path: Path) -> None:
    done = run_sweep(
        [
            "-m",
            "experiment=smoke",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "seeds.start=0,1",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    sweep = tmp_path / "sweeps" / "smoke"
    checksums = _table_checksums(sweep)
    assert len(checksums) == 4
    serial = run_sweep(
        ["-m", "experiment=smoke", "seeds.start=0,1", "output.root=serial"], tmp_path
    )
    assert serial.returncode == 0, serial.stderr
    assert _table_checksums(tmp_path / "serial" / "smoke") == checksums


def test_a_sweep_killed_half_way_resumes_to_the_same_tables(tmp_path: Path) -> None:
    args = [
        "-m",
        "experiment=smoke",
        "profile=direct,policy_gated,commit_guarded,reconciled,full_lifecycle",
        "adapter.factory._target_=tests.sweep.adapters.slow",
        "+adapter.factory.delay=0.05",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cavbench.sweep", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sweep = tmp_path / "sweeps" / "smoke"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:  # wait until two cells are complete
            complete = (
                [d for d in cell_dirs(sweep) if read_cell_manifest(d).status is CellStatus.COMPLETE]
                if sweep.is_dir()
                else []
            )
            if len(complete) >= 2:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    statuses = {d: read_cell_manifest(d).status for d in cell_dirs(sweep)}
    finished = {d for d, s in statuses.items() if s is CellStatus.COMPLETE}
    assert 2 <= len(finished) < 5, statuses

    resumed = run_sweep(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("skipped (complete") + resumed.stdout.count(
        "skipped (complete"
    ) == len(finished)
    reference = run_sweep([*args, "output.root=reference"], tmp_path)
    assert reference.returncode == 0, reference.stderr
    assert _table_checksums(sweep) == _table_checksums(tmp_path / "reference" / "smoke")
    assert not list(sweep.rglob("*.tmp-*"))


def test_a_failing_cell_fails_the_sweep_but_not_the_other_cells(tmp_path: Path) -> None:
    done = run_sweep(["-m", "experiment=smoke", "scenarios.ids=[MK-01],[XX-99]"], tmp_path)
    assert done.returncode != 0
    statuses = sorted(
        read_cell_manifest(d).status.value for d in cell_dirs(tmp_path / "sweeps" / "smoke")
    )
    assert statuses == ["COMPLETE", "COMPLETE", "FAILED", "FAILED"]


def test_hydra_sweep_dir_holds_everything(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "my-sweep"
    done = run_sweep(
        ["-m", "scenarios=mock", "profile=direct,reconciled", f"hydra.sweep.dir={target}"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert len(cell_dirs(target)) == 2
    assert (target / "multirun.yaml").is_file()
    assert not (tmp_path / "sweeps").exists()
    assert cavbench_main(["collect", str(target)]) == 0


def test_a_bad_sweep_name_fails_before_any_folder_is_made(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    done = run_sweep(["-m", "scenarios=mock", "output.name=../../x"], tmp_path / "work")
    assert done.returncode != 0
    assert "output.name='../../x'" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert not any((tmp_path / "work").iterdir())


def test_typos_and_missing_extras_fail_before_hydra(tmp_path: Path) -> None:
    done = run_sweep(["scenarios=mock", "+seeds.cout=3"], tmp_path)
    assert done.returncode == 1
    assert "key 'seeds.cout' is not in the sweep config schema" in done.stderr
    assert not (tmp_path / "sweeps").exists()


def test_two_sweeps_into_one_folder_both_finish_every_cell(tmp_path: Path) -> None:
    args = [
        "-m",
        "scenarios=mock",
        "profile=direct,reconciled,full_lifecycle",
        "adapter.factory._target_=tests.sweep.adapters.slow",
        "+adapter.factory.delay=0.05",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "cavbench.sweep", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    sweep = tmp_path / "sweeps" / "default"
    assert len(_table_checksums(sweep)) == 3
    assert cavbench_main(["collect", str(sweep)]) == 0


def test_cavbench_sweep_console_script_completes_overrides(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("cavbench-sweep")
    if not script.is_file():
        pytest.skip("cavbench-sweep is not installed in this environment")
    done = subprocess.run(
        [str(script), "-sc", "query=bash"],
        env={**os.environ, "COMP_LINE": "cavbench-sweep seeds.co"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
    )
    assert "seeds.count=" in done.stdout
