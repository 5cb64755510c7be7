"""One job = one cell: tables + manifest written atomically; resume, failures, crashes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from omegaconf import DictConfig

from cavbench.errors import ConfigError
from cavbench.study import CellPlan, run_cell
from cavbench.tables import (
    MANIFEST_NAME,
    TRACEBACK_NAME,
    CellStatus,
    Table,
    read_cell_manifest,
    read_table,
    verify_cell,
)

from .conftest import CRASHING, MOCK

Config = Callable[..., DictConfig]


def _checksums(directory: Path) -> dict[str, str]:
    manifest = read_cell_manifest(directory)
    return {name: record.sha256 for name, record in manifest.tables.items()}


def test_a_cell_writes_six_tables_and_a_complete_manifest(config: Config) -> None:
    cfg = config("profile=direct")
    result = run_cell(cfg)
    directory = Path(result.directory)
    assert not result.skipped
    assert result.status is CellStatus.COMPLETE
    assert sorted(p.name for p in directory.glob("*.parquet")) == sorted(t.filename for t in Table)
    assert not list(directory.glob("*.tmp-*"))
    manifest = read_cell_manifest(directory)
    assert manifest.status is CellStatus.COMPLETE
    assert manifest.n_episodes == 5
    assert manifest.n_errors == 0
    assert manifest.pack is not None
    assert manifest.pack.id == "mock"
    assert manifest.keys["profile"] == "direct"
    assert manifest.config["profile"] == {"name": "direct"}
    assert verify_cell(directory) == []
    episodes = read_table(directory / "episodes.parquet", Table.EPISODES)
    assert episodes.num_rows == 5
    assert episodes.column("profile").to_pylist() == ["direct"] * 5
    assert len(set(episodes.column("episode_id").to_pylist())) == 5


def test_every_swept_factor_is_an_episodes_column_and_a_folder(config: Config) -> None:
    cfg = config("+factors.temperature=0.7", "+factors.model=m-1", "seeds.count=2")
    result = run_cell(cfg)
    assert result.cell.endswith("/model=m-1/temperature=0.7")
    frame = pl.read_parquet(Path(result.directory) / "episodes.parquet")
    assert frame["temperature"].unique().to_list() == ["0.7"]
    assert frame["model"].unique().to_list() == ["m-1"]
    assert sorted(frame["seed"].unique().to_list()) == [0, 1]
    for column in ("profile", "adapter", "pack_id", "scenarios", "scoring_rule", "seeds"):
        assert column in frame.columns


def test_the_footer_carries_the_manifests_key_facts(config: Config) -> None:
    result = run_cell(config())
    table = read_table(Path(result.directory) / "verdicts.parquet", Table.VERDICTS)
    assert table.schema.metadata is not None
    facts = json.loads(table.schema.metadata[b"cavbench"])
    manifest = read_cell_manifest(Path(result.directory))
    assert facts["config_hash"] == manifest.config_hash
    assert facts["pack_digest"] == manifest.pack.digest if manifest.pack else False
    assert facts["scoring_rule"] == "v1"
    assert facts["content_sha256"] == manifest.tables["verdicts"].sha256


def test_the_same_config_gives_the_same_table_content(tmp_path: Path, config: Config) -> None:
    first = run_cell(config("profile=reconciled"))
    other = config("profile=reconciled")
    other.output.root = str(tmp_path / "again")
    second = run_cell(other)
    assert _checksums(Path(first.directory)) == _checksums(Path(second.directory))
    a = json.loads((Path(first.directory) / MANIFEST_NAME).read_text())
    b = json.loads((Path(second.directory) / MANIFEST_NAME).read_text())
    assert a == b


def test_a_complete_cell_is_skipped_on_the_second_run(config: Config) -> None:
    cfg = config()
    first = run_cell(cfg)
    stamp = (Path(first.directory) / "events.parquet").stat().st_mtime_ns
    second = run_cell(cfg)
    assert second.skipped
    assert second.n_episodes == first.n_episodes
    assert (Path(first.directory) / "events.parquet").stat().st_mtime_ns == stamp


def test_a_damaged_table_makes_the_cell_run_again(config: Config) -> None:
    cfg = config()
    first = run_cell(cfg)
    directory = Path(first.directory)
    before = _checksums(directory)
    path = directory / "events.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # half-written file
    assert verify_cell(directory)
    again = run_cell(cfg)
    assert not again.skipped
    assert verify_cell(directory) == []
    assert _checksums(directory) == before


def test_a_running_cell_is_redone_and_stale_temp_files_are_removed(config: Config) -> None:
    cfg = config()
    directory = Path(run_cell(cfg).directory)
    manifest = read_cell_manifest(directory)
    (directory / MANIFEST_NAME).write_text(
        manifest.model_copy(update={"status": CellStatus.RUNNING}).model_dump_json()
    )
    (directory / "episodes.parquet.tmp-99999").write_bytes(b"PAR1 half")
    assert verify_cell(directory) == ["status is RUNNING, not COMPLETE"]
    assert not run_cell(cfg).skipped
    assert not list(directory.glob("*.tmp-*"))
    assert verify_cell(directory) == []


def test_overwrite_redoes_a_complete_cell(config: Config) -> None:
    run_cell(config())
    assert not run_cell(config("output.overwrite=true")).skipped


def test_a_folder_holding_another_config_is_refused(config: Config) -> None:
    run_cell(config())
    # Same folder name (the factory argument is not a cell key), different config.
    changed = config("+adapter.factory.extra=1")
    assert CellPlan.from_config(changed).cell == CellPlan.from_config(config()).cell
    with pytest.raises(ConfigError, match="another config"):
        run_cell(changed)


def test_an_adapter_that_raises_gives_an_error_row_and_the_cell_goes_on(config: Config) -> None:
    result = run_cell(config(*CRASHING))
    assert result.status is CellStatus.COMPLETE
    assert result.n_errors == 1
    directory = Path(result.directory)
    episodes = pl.read_parquet(directory / "episodes.parquet")
    crashed = episodes.filter(pl.col("scenario_id") == "MK-02")
    assert crashed.height == 1
    assert "adapter bug triggered in MK-02" in crashed["error"][0]
    assert crashed["reported_status"][0] == "failed"
    assert not crashed["outcome_success"][0]
    assert not crashed["commit_valid_success"][0]
    others = episodes.filter(pl.col("scenario_id") != "MK-02")
    assert others["error"].null_count() == others.height == 4
    events = pl.read_parquet(directory / "events.parquet")
    assert "run_error" in events.filter(pl.col("scenario_id") == "MK-02")["event_type"].to_list()
    assert read_cell_manifest(directory).n_errors == 1


def test_a_failed_cell_leaves_failed_status_and_its_traceback(config: Config) -> None:
    cfg = config(
        "adapter.name=broken", "adapter.factory._target_=tests.sweep.adapters.not_an_adapter"
    )
    with pytest.raises(ConfigError, match="not_an_adapter"):
        run_cell(cfg)
    directory = CellPlan.from_config(cfg).cell_dir
    manifest = read_cell_manifest(directory)
    assert manifest.status is CellStatus.FAILED
    assert manifest.error is not None
    assert "ConfigError" in manifest.error
    assert "ConfigError" in (directory / TRACEBACK_NAME).read_text()
    assert verify_cell(directory) == ["status is FAILED, not COMPLETE"]


def test_a_missing_factory_target_fails_before_anything_is_written(config: Config) -> None:
    cfg = config("~adapter.factory._target_")
    with pytest.raises(ConfigError, match="_target_"):
        run_cell(cfg)


def test_an_unknown_scenario_id_fails_the_cell(config: Config) -> None:
    cfg = config("scenarios.ids=[XX-99]")
    with pytest.raises(Exception, match="XX-99"):
        run_cell(cfg)
    assert read_cell_manifest(CellPlan.from_config(cfg).cell_dir).status is CellStatus.FAILED


def test_bad_seed_blocks_are_refused(config: Config) -> None:
    with pytest.raises(ConfigError, match="count"):
        CellPlan.from_config(config("seeds.count=0"))


def test_row_groups_change_no_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell written a few episodes at a time (many row groups) records the same tables."""
    from cavbench.study import _job, compose

    def cell(root: str) -> Path:
        cfg = compose([*MOCK, f"output.root={tmp_path / root}", "profile=direct", "seeds.count=3"])
        return Path(run_cell(cfg).directory)

    whole = cell("whole")
    monkeypatch.setattr(_job, "ROW_GROUP_EPISODES", 2)
    parts = cell("parts")
    assert _checksums(parts) == _checksums(whole)
    episodes = read_cell_manifest(parts).n_episodes
    assert pq.ParquetFile(parts / "episodes.parquet").metadata.num_row_groups == -(-episodes // 2)
    assert verify_cell(parts) == []
