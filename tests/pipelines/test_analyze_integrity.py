"""`cavbench analyze` trusts nothing unchecked: every input is verified like `collect` does.

Each test damages a copy of a real sweep the way a user (or a hostile user) did and checks
that analyze refuses with a message naming the fix, and never shows a traceback.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from cavbench.study import compose, run_cell
from cavbench.tables import collect
from pipelines.cli import register

DIRECT = "profile=direct/adapter=baseline/pack_id=mock/scenarios=all/scoring_rule=v1/seeds=0-1"
FULL = (
    "profile=full_lifecycle/adapter=baseline/pack_id=mock/scenarios=all/scoring_rule=v1/seeds=0-1"
)


def _analyze(sweep: Path, out: Path, *extra: str) -> list[str]:
    parser = argparse.ArgumentParser(prog="cavbench")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            *("analyze", str(sweep), "--out", str(out), "--resamples", "100", "--quiet"),
            *("--figure-formats", "svg", *extra),
        ]
    )
    return [str(args.func(args))]


@pytest.fixture
def sweep(real_sweep: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(real_sweep, tmp_path / "s"))


def _flip(path: Path) -> None:
    data = pq.read_table(path)
    column = data.column("commit_valid_success")
    flipped = pc.invert(column.combine_chunks())
    index = data.schema.get_field_index("commit_valid_success")
    pq.write_table(data.set_column(index, data.field(index), flipped), path)


def _empty(path: Path) -> None:
    data = pq.read_table(path)
    pq.write_table(data.slice(0, 0), path)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _swap(sweep: Path) -> None:
    a, b = sweep / DIRECT / "verdicts.parquet", sweep / FULL / "verdicts.parquet"
    tmp = a.with_suffix(".swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _failed_cell(sweep: Path) -> None:
    with pytest.raises(Exception, match="lacks name/version/run"):
        run_cell(
            compose(
                [
                    "scenarios=mock",
                    "output.progress=false",
                    f"output.root={sweep.parent}",
                    f"output.name={sweep.name}",
                    "profile=direct",
                    "adapter.name=broken",
                    "adapter.factory._target_=tests.sweep.adapters.not_an_adapter",
                    "seeds.count=2",
                ]
            )
        )


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "flipped-value": (lambda s: _flip(s / DIRECT / "episodes.parquet"), "content checksum"),
    "swapped-tables": (_swap, "verdicts.parquet"),
    "emptied-table": (lambda s: _empty(s / DIRECT / "events.parquet"), "events.parquet has 0 rows"),
    "deleted-table": (
        lambda s: (s / DIRECT / "ledger.parquet").unlink(),
        "ledger.parquet is missing",
    ),
    "truncated-table": (lambda s: _truncate(s / DIRECT / "events.parquet"), "events.parquet"),
    "failed-before-tables": (_failed_cell, "status is FAILED"),
    "lost-manifest": (lambda s: (s / FULL / "manifest.json").unlink(), "without a manifest.json"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_analyze_refuses_damaged_or_incomplete_input(
    sweep: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, message = DAMAGE[name]
    damage(sweep)
    assert _analyze(sweep, tmp_path / "out") == ["1"]
    err = capsys.readouterr().err
    assert err.startswith("ERROR:")
    assert message in err
    assert "--allow-incomplete" in err or "cavbench collect" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_allow_incomplete_leaves_the_damaged_cell_out_and_lists_it(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _flip(sweep / DIRECT / "episodes.parquet")
    assert _analyze(sweep, tmp_path / "out", "--allow-incomplete") == ["0"]
    captured = capsys.readouterr()
    assert f"left out incomplete or damaged cell {DIRECT}" in captured.err
    assert "| full_lifecycle" in captured.out
    assert "| direct " not in captured.out


def test_a_stale_collected_folder_is_refused(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    collect(sweep)
    run_cell(
        compose(
            [
                "scenarios=mock",
                "output.progress=false",
                f"output.root={sweep.parent}",
                f"output.name={sweep.name}",
                "profile=reconciled",
                "seeds.count=2",
            ]
        )
    )
    assert _analyze(sweep, tmp_path / "out") == ["1"]
    err = capsys.readouterr().err
    assert "stale" in err
    assert "1 cell(s) not collected" in err
    assert f"cavbench collect {sweep}" in err
    collect(sweep)
    assert _analyze(sweep, tmp_path / "out") == ["0"]


def test_a_damaged_collected_table_is_refused(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    collect(sweep)
    data = pq.read_table(sweep / "collected" / "episodes.parquet")
    pq.write_table(data.slice(1), sweep / "collected" / "episodes.parquet")
    assert _analyze(sweep, tmp_path / "out") == ["1"]
    assert "episodes.parquet" in capsys.readouterr().err


def test_one_flag_name_across_collect_recompute_and_analyze() -> None:
    from cavbench.cli import build_parser

    parser = build_parser([])
    for command in ("collect", "recompute", "analyze"):
        sub = next(
            a
            for a in parser._subparsers._group_actions[0].choices[command]._actions  # type: ignore[union-attr]
            if "--allow-incomplete" in a.option_strings
        )
        assert sub.dest == "allow_incomplete"


def test_default_grouping_follows_what_varies() -> None:
    import polars as pl

    from pipelines.analyze import default_group_by

    def frame(pairs: list[tuple[str, str]]) -> pl.DataFrame:
        return pl.DataFrame({"adapter": [a for a, _ in pairs], "profile": [p for _, p in pairs]})

    assert default_group_by(frame([("baseline", "direct"), ("baseline", "reconciled")])) == (
        "profile",
    )
    assert default_group_by(frame([("mine", "none"), ("yours", "none")])) == ("adapter",)
    assert default_group_by(frame([("baseline", "direct"), ("mine", "none")])) == ("system",)


def test_custom_adapter_cells_are_grouped_by_adapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("copy_a", "copy_b"):
        run_cell(
            compose(
                [
                    "scenarios=mock",
                    "output.progress=false",
                    f"output.root={tmp_path}",
                    "output.name=s",
                    f"adapter.name={name}",
                    "adapter.factory._target_=tests.sweep.adapters.reconciled_copy",
                ]
            )
        )
    assert _analyze(tmp_path / "s", tmp_path / "out") == ["0"]
    out = capsys.readouterr().out
    assert "| copy_a" in out
    assert "| copy_b" in out
    assert "none" not in out.split("\n\n")[0]
