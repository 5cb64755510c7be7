"""Reading sweeps: collected tables first, else hive job folders; clear errors otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import SweepNotFoundError, SyntheticTables, TableSchemaError, read_sweep
from analysis._frames import RECORD_COLUMNS
from analysis._io import Layout, hive_keys


def write_jobs(
    root: Path, tables: SyntheticTables, *, status: str = "COMPLETE", factors: tuple[str, ...] = ()
) -> list[Path]:
    """One hive folder per profile, as the sweep writes them."""
    folders = []
    for (profile,), part in tables.episodes.group_by(["profile"], maintain_order=True):
        folder = root / f"profile={profile}" / "adapter=baseline" / "seeds=0-0"
        folder.mkdir(parents=True)
        part.write_parquet(folder / "episodes.parquet")
        tables.verdicts.join(part.select("episode_id"), on="episode_id", how="semi").write_parquet(
            folder / "verdicts.parquet"
        )
        manifest = {"status": status if profile == "direct" else "COMPLETE", "factors": factors}
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        folders.append(folder)
    return folders


def test_job_folders_are_read_with_their_path_keys(
    ablation: SyntheticTables, tmp_path: Path
) -> None:
    root = tmp_path / "x=y" / "sweep"  # a '=' above the sweep root is not a key
    write_jobs(root, ablation)
    tables = read_sweep(root)
    assert tables.layout is Layout.JOBS
    assert tables.episodes.height == 200
    assert tables.verdicts is not None
    assert tables.verdicts.height == 1000
    assert "x" not in tables.episodes.columns
    assert tables.path_columns == ("seeds",)  # profile and adapter duplicate real columns
    assert tables.episodes["adapter"].n_unique() == 5  # the file's value wins over the path's
    assert len(tables.sources) == 10
    assert all(len(s.sha256) == 64 for s in tables.sources)


def test_collected_tables_are_preferred(ablation: SyntheticTables, tmp_path: Path) -> None:
    write_jobs(tmp_path, ablation)
    (tmp_path / "collected").mkdir()
    ablation.episodes.head(40).write_parquet(tmp_path / "collected" / "episodes.parquet")
    tables = read_sweep(tmp_path, with_verdicts=False)
    assert tables.layout is Layout.COLLECTED
    assert tables.episodes.height == 40


def test_an_incomplete_job_is_refused_unless_skipped(
    ablation: SyntheticTables, tmp_path: Path
) -> None:
    write_jobs(tmp_path, ablation, status="FAILED")
    with pytest.raises(SweepNotFoundError, match="status is FAILED"):
        read_sweep(tmp_path)
    tables = read_sweep(tmp_path, skip_incomplete=True)
    assert tables.skipped_cells == ("profile=direct/adapter=baseline/seeds=0-0",)
    assert "direct" not in tables.episodes["profile"].to_list()


def test_factors_come_from_the_manifests_else_from_unknown_columns(
    ablation: SyntheticTables, tmp_path: Path
) -> None:
    with_factor = SyntheticTables(
        ablation.episodes.with_columns(
            pl.lit("0.5").alias("fault_rate"), pl.lit("x").alias("note")
        ),
        ablation.verdicts,
    )
    write_jobs(tmp_path / "a", with_factor, factors=("fault_rate",))
    assert read_sweep(tmp_path / "a").factor_columns == ("fault_rate",)
    single = tmp_path / "b"
    single.mkdir()
    with_factor.episodes.write_parquet(single / "episodes.parquet")
    tables = read_sweep(single)
    assert tables.layout is Layout.SINGLE
    assert tables.verdicts is None
    assert tables.factor_columns == ("fault_rate", "note")


def test_missing_sweeps_and_duplicate_episodes_are_clear_errors(
    ablation: SyntheticTables, tmp_path: Path
) -> None:
    with pytest.raises(SweepNotFoundError, match="not a directory"):
        read_sweep(tmp_path / "nowhere")
    with pytest.raises(SweepNotFoundError, match=r"no episodes\.parquet"):
        read_sweep(tmp_path)
    pl.concat([ablation.episodes, ablation.episodes.head(1)]).write_parquet(
        tmp_path / "episodes.parquet"
    )
    with pytest.raises(TableSchemaError, match="share an id"):
        read_sweep(tmp_path)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
        st.from_regex(r"[a-z0-9.\-]{0,8}", fullmatch=True),
        max_size=4,
    )
)
def test_hive_keys_round_trip(keys: dict[str, str]) -> None:
    root = Path("/sweep")
    path = root.joinpath(*(f"{k}={v}" for k, v in keys.items()), "episodes.parquet")
    assert hive_keys(root, path) == keys


def test_known_columns_cover_the_sweeps_declared_schema() -> None:
    """The analysis must not mistake a declared column for a swept factor."""
    tables = pytest.importorskip("cavbench.tables", reason="the sweep's tables module is absent")
    declared = set(tables.SCHEMAS[tables.Table.EPISODES].names)
    assert declared <= RECORD_COLUMNS, sorted(declared - RECORD_COLUMNS)
