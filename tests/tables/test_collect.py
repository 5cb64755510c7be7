"""`collect` merges only finished cells; `recompute` re-scores and reports what differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cavbench.cli import main as cavbench_main
from cavbench.scenarios import builtin_pack_root
from cavbench.study import compose, run_cell
from cavbench.tables import (
    MANIFEST_NAME,
    PARTITION_KEYS,
    CellStatus,
    SweepError,
    Table,
    TableRecord,
    collect,
    read_cell_manifest,
    read_sweep_manifest,
    read_table,
    recompute,
    write_manifest,
    write_table,
)


def _sweep(
    root: Path, *extra: str, profiles: tuple[str, ...] = ("direct", "full_lifecycle")
) -> Path:
    for profile in profiles:
        run_cell(
            compose(
                [
                    "scenarios=mock",
                    "output.progress=false",
                    f"output.root={root}",
                    "output.name=s",
                    f"profile={profile}",
                    *extra,
                ]
            )
        )
    return root / "s"


def test_collect_writes_one_file_per_table_with_partition_keys(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, "+factors.temperature=0.5")
    result = collect(sweep)
    out = sweep / "collected"
    assert result.out_dir == out
    assert result.left_out == ()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MANIFEST_NAME, *(t.filename for t in Table)]
    )
    manifest = read_sweep_manifest(out)
    assert manifest.n_cells == 2
    assert manifest.n_episodes == 10
    assert manifest.partition_keys == (*PARTITION_KEYS, "temperature")
    for table in Table:
        data = read_table(out / table.filename, table, collected=True)
        assert data.num_rows == manifest.tables[table.value].rows
        for key in ("cell", *PARTITION_KEYS, "temperature"):
            assert key in data.column_names, (table, key)
    events = pl.read_parquet(out / "events.parquet")
    assert set(events["profile"].unique()) == {"direct", "full_lifecycle"}
    assert set(events["temperature"].unique()) == {"0.5"}
    frame = pd.read_parquet(out / "episodes.parquet")
    assert len(frame) == 10
    assert set(frame["profile"]) == {"direct", "full_lifecycle"}


def test_collect_is_deterministic(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    first = collect(sweep).manifest.tables
    second = collect(sweep, tmp_path / "again").manifest.tables
    assert first == second


def test_hive_reads_of_the_raw_sweep_agree_with_the_files(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    frame = pl.scan_parquet(
        sweep / "profile=*" / "**" / "episodes.parquet", hive_partitioning=True
    ).collect()
    assert frame.height == 10
    assert frame["seeds"].dtype == pl.String
    assert set(frame["seeds"]) == {"0-0"}


def test_collect_refuses_an_unfinished_cell_unless_told(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    directory = next(p.parent for p in sweep.rglob(MANIFEST_NAME) if "profile=direct" in str(p))
    manifest = read_cell_manifest(directory)
    write_manifest(directory, manifest.model_copy(update={"status": CellStatus.RUNNING}))
    with pytest.raises(SweepError, match=r"(?s)1 cell.*not complete.*RUNNING"):
        collect(sweep)
    result = collect(sweep, allow_incomplete=True)
    assert result.manifest.n_cells == 1
    assert len(result.left_out) == 1
    with pytest.raises(SweepError, match="not complete"):
        recompute(sweep)
    assert recompute(sweep, allow_incomplete=True).n_cells == 1


def test_collect_refuses_a_tampered_table(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    path = next(sweep.rglob("findings.parquet"))
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(SweepError, match=r"findings\.parquet"):
        collect(sweep)


def test_recompute_finds_a_forged_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = _sweep(tmp_path, profiles=("direct",))
    directory = next(p.parent for p in sweep.rglob(MANIFEST_NAME))
    manifest = read_cell_manifest(directory)
    episodes = read_table(directory / "episodes.parquet", Table.EPISODES)
    flipped = pc.invert(episodes.column("commit_valid_success"))
    forged = episodes.set_column(
        episodes.schema.get_field_index("commit_valid_success"),
        episodes.schema.field("commit_valid_success"),
        flipped,
    ).replace_schema_metadata(None)
    written = write_table(directory, Table.EPISODES, forged, {})
    tables = {
        **manifest.tables,
        "episodes": TableRecord(file=written.path.name, rows=written.rows, sha256=written.sha256),
    }
    write_manifest(directory, manifest.model_copy(update={"tables": tables}))
    report = recompute(sweep)
    assert not report.ok
    assert report.n_differing_episodes == 5
    assert {d.field for d in report.differences} == {"commit_valid_success"}
    [change] = report.rate_changes
    assert (change.group, change.metric, change.n) == ("direct", "CVSR", 5)
    assert change.recorded == 5 - change.recomputed
    capsys.readouterr()
    assert cavbench_main(["recompute", str(sweep)]) == 1
    out = capsys.readouterr().out
    assert "5 differences in 5 episodes" in out
    assert f"  {change.line()}" in out
    assert (
        f"direct CVSR {change.recorded / 5:.3f} → {change.recomputed / 5:.3f} "
        f"({change.recorded}/5 → {change.recomputed}/5)" in out
    )
    assert cavbench_main(["recompute", str(sweep), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["n_differing_episodes"] == 5


def test_recompute_reads_the_pack_stored_in_the_sweep_and_checks_any_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pack = tmp_path / "mypack"
    shutil.copytree(builtin_pack_root() / "mock", pack)
    sweep = _sweep(tmp_path, f"scenarios.pack={pack}", profiles=("direct",))
    stored = read_cell_manifest(next(sweep.rglob(MANIFEST_NAME)).parent).pack
    assert stored is not None
    assert stored.stored == ".packs/" + stored.digest.removeprefix("sha256:")
    assert (sweep / stored.stored / "pack.json").is_file()
    scenario = next((pack / "scenarios").glob("*.json"))
    doc = json.loads(scenario.read_text())
    doc["title"] = doc["title"] + " (edited)"
    scenario.write_text(json.dumps(doc))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert recompute(sweep).ok  # the edited pack is not used: the sweep kept its own copy
    with pytest.raises(SweepError, match=r"--pack .* has digest"):
        recompute(sweep, pack=pack)
    shutil.rmtree(sweep / stored.stored)
    with pytest.raises(SweepError, match="digest"):
        recompute(sweep)
    assert recompute(sweep, pack=builtin_pack_root() / "mock").ok


def test_recompute_rule_reports_every_rate_and_changes_none_on_state_mutation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Golden: v1_strict changes no headline count of core-v1 (docs/methodology.md)."""
    sweep = _sweep(
        tmp_path, "scenarios=core-v1", "scenarios.families=[state_mutation]", profiles=("direct",)
    )
    report = recompute(sweep, rule="v1_strict")
    assert [(r.group, r.metric, r.n) for r in report.rates] == [
        ("direct", "OSR", 10),
        ("direct", "PAOSR", 10),
        ("direct", "CVSR", 10),
    ]
    assert report.rate_changes == ()
    cavbench_main(["recompute", str(sweep), "--rule", "v1_strict"])
    assert "→" not in capsys.readouterr().out


def test_collect_cli_prints_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep(tmp_path)
    assert cavbench_main(["collect", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "collected 2 cells, 10 episodes" in out
    assert "verdicts" in out
    assert cavbench_main(["recompute", str(sweep / "collected")]) == 0
    assert "0 differences" in capsys.readouterr().out


def test_errors_name_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cavbench_main(["collect", str(tmp_path / "nowhere")]) == 1
    assert "nowhere: no such sweep folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(SweepError, match="no complete cell"):
        collect(tmp_path / "empty")
    with pytest.raises(SweepError, match=r"nothing to recompute|no cells|no complete cell"):
        recompute(tmp_path / "empty")


def test_arrow_types_are_the_declared_ones_after_collect(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    collect(sweep)
    data = read_table(sweep / "collected" / "events.parquet", Table.EVENTS, collected=True)
    assert data.schema.field("resource_refs").type == pa.list_(pa.string())
