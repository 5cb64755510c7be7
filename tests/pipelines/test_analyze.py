"""`cavbench analyze`: a sweep in, metrics/tables/figures/manifest out, atomically."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from analysis import (
    BootstrapConfig,
    FigureFormat,
    MixedInputError,
    SyntheticTables,
    ablation_standin,
    sha256_file,
)
from pipelines.analyze import ANALYSIS_MANIFEST, AnalyzeOptions, compute_analysis, run_analyze
from pipelines.cli import register

FAST = AnalyzeOptions(bootstrap=BootstrapConfig(n_resamples=1_000, seed=3))
SVG_ONLY = AnalyzeOptions(bootstrap=FAST.bootstrap, formats=(FigureFormat.SVG,))
GOLDEN_CVSR = {
    "direct": 20,
    "policy_gated": 40,
    "commit_guarded": 60,
    "reconciled": 70,
    "full_lifecycle": 80,
}


@pytest.fixture(scope="module")
def analyzed(sweep_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("analysis") / "out"
    run_analyze(sweep_dir, out, FAST, verify=False)
    return out


def test_writes_every_output(analyzed: Path) -> None:
    names = {p.relative_to(analyzed).as_posix() for p in analyzed.rglob("*") if p.is_file()}
    for table in ("metrics", "metrics_by_family", "contrasts", "pass_k", "failure_codes"):
        assert f"{table}.parquet" in names
    assert "dimensions.parquet" in names
    for report in ("headline", "contrasts"):
        assert {f"{report}.md", f"{report}.tex"} <= names
    for figure in (
        "validity_gap",
        "osr_cvsr_dumbbell",
        "cvsr_vg_by_family",
        "cvsr_family_heatmap",
        "paired_differences",
        "dimension_fail_rates",
    ):
        assert {f"figures/{figure}.{ext}" for ext in ("svg", "pdf", "png", "csv")} <= names
    assert ANALYSIS_MANIFEST in names
    assert not list(analyzed.parent.glob(".out.tmp-*"))


def test_metrics_parquet_holds_the_golden_counts(analyzed: Path) -> None:
    metrics = pl.read_parquet(analyzed / "metrics.parquet")
    cvsr = metrics.filter(pl.col("metric") == "CVSR")
    assert dict(zip(cvsr["profile"], cvsr["k"], strict=True)) == GOLDEN_CVSR
    assert cvsr["n"].unique().to_list() == [80]
    assert cvsr["n_tasks"].unique().to_list() == [40]


def test_manifest_names_inputs_checksums_parameters_and_libraries(
    analyzed: Path, sweep_dir: Path
) -> None:
    manifest = json.loads((analyzed / ANALYSIS_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["kind"] == "cavbench.analysis"
    assert manifest["layout"] == "jobs"
    assert len(manifest["inputs"]) == 20
    first = manifest["inputs"][0]
    assert first["sha256"] == sha256_file(sweep_dir / first["path"])
    assert manifest["parameters"]["seed"] == 3
    assert manifest["parameters"]["n_resamples"] == 1_000
    assert manifest["parameters"]["method"] == "bca"
    assert {"python", "numpy", "scipy", "polars", "matplotlib"} <= set(manifest["library_versions"])
    outputs = {o["path"]: o["sha256"] for o in manifest["outputs"]}
    assert outputs["headline.md"] == sha256_file(analyzed / "headline.md")


def test_rerunning_replaces_the_output_and_gives_the_same_numbers(
    sweep_dir: Path, analyzed: Path, tmp_path: Path
) -> None:
    out = Path(shutil.copytree(analyzed, tmp_path / "again"))  # an output analyze wrote
    (out / "stale.txt").write_text("from an older run", encoding="utf-8")
    run_analyze(sweep_dir, out, SVG_ONLY, verify=False)
    assert not (out / "stale.txt").exists()
    for name in ("headline.md", "headline.tex", "figures/validity_gap.csv", "figures/pass_k.svg"):
        assert (out / name).read_bytes() == (analyzed / name).read_bytes()


def test_refuses_to_replace_a_directory_it_did_not_write(sweep_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(Exception, match="refusing to replace"):
        run_analyze(sweep_dir, tmp_path, FAST, verify=False)
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "precious"


def test_filters_and_mixing_checks(standin: SyntheticTables) -> None:
    only = compute_analysis(
        standin.episodes,
        None,
        AnalyzeOptions(bootstrap=FAST.bootstrap, where=(("family", "execution_recovery"),)),
    )
    assert only.metrics.frame["n"].unique().to_list() == [10]
    assert only.dimensions is None
    mixed = pl.concat(
        [standin.episodes, standin.episodes.with_columns(pl.lit("v1_strict").alias("scoring_rule"))]
    )
    with pytest.raises(MixedInputError, match="scoring_rule"):
        compute_analysis(mixed, None, FAST)
    split = compute_analysis(
        mixed, None, AnalyzeOptions(bootstrap=FAST.bootstrap, group_by=("profile", "scoring_rule"))
    )
    assert split.metrics.frame.height == 5 * 2 * 5
    assert split.contrasts is not None
    assert split.contrasts.frame["scoring_rule"].n_unique() == 2


def _cli() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cavbench")
    register(parser.add_subparsers(dest="command", required=True))
    return parser


def test_cli_prints_the_headline_with_both_intervals(
    real_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _cli().parse_args(
        [
            "analyze",
            str(real_sweep),
            "--out",
            str(tmp_path / "o"),
            "--resamples",
            "500",
            "--figure-formats",
            "svg",
        ]
    )
    assert args.func(args) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "| direct         | estimate (k/n) |" in printed
    assert "95% clustered" in printed
    assert "95% Wilson" in printed
    assert not list((tmp_path / "o" / "figures").glob("*.png"))
    assert "verify checksums" in captured.err  # per-stage progress
    assert "paired contrasts" in captured.err


def test_cli_quiet_prints_no_progress(
    real_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["analyze", str(real_sweep), "--out", str(tmp_path / "o"), "--resamples", "200"]
    args = _cli().parse_args([*argv, "--figure-formats", "svg", "--quiet"])
    assert args.func(args) == 0
    assert capsys.readouterr().err == ""


def test_cli_reports_errors_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _cli().parse_args(["analyze", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert args.func(args) == 1
    assert "ERROR:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _cli().parse_args(["analyze", "x", "--out", "y", "--contrast-metrics", "XYZ"])
    with pytest.raises(SystemExit):
        _cli().parse_args(["analyze", "x", "--out", "y", "--figure-formats", "gif"])


def _pack_episodes(pack_id: str) -> pl.DataFrame:
    """Every baseline profile on a built-in pack, as an episodes frame (one seed)."""
    from cavbench.adapters import BASELINE_PROFILES, baseline
    from cavbench.runner import run_episodes, verdict_row
    from cavbench.scenarios import load_pack

    pack = load_pack(pack_id)
    rows = [
        verdict_row(episode, str(profile))
        for profile in BASELINE_PROFILES
        for episode in run_episodes(pack, baseline(profile))
    ]
    return pl.DataFrame(rows).with_columns(
        pl.format("{}-{}", "profile", "scenario_id").alias("episode_id"),
        pl.col("failure_codes").str.split(";").list.eval(pl.element().filter(pl.element() != "")),
        pl.lit(pack_id).alias("pack_id"),
    )


@pytest.mark.parametrize(
    ("pack_id", "scenarios", "where"),
    [
        ("mock", None, ()),
        ("mock", 3, ()),
        ("core-v1", None, (("scenario_id", "ER-01"),)),
    ],
    ids=["mock pack, five profiles", "three-scenario pack", "--where scenario_id=ER-01"],
)
def test_contrasts_with_a_single_discordant_task_give_p_one(
    pack_id: str, scenarios: int | None, where: tuple[tuple[str, str], ...]
) -> None:
    episodes = _pack_episodes(pack_id)
    if scenarios is not None:
        keep = sorted(episodes["scenario_id"].unique().to_list())[:scenarios]
        episodes = episodes.filter(pl.col("scenario_id").is_in(keep))
    options = AnalyzeOptions(bootstrap=FAST.bootstrap, where=where)
    bundle = compute_analysis(episodes, None, options)
    assert bundle.contrasts is not None
    frame = bundle.contrasts.frame
    single = frame.filter(pl.col("left_higher") + pl.col("right_higher") == 1)
    assert single.height >= 1, frame
    assert single["mcnemar_p"].to_list() == [1.0] * single.height
    assert single["permutation_p"].to_list() == [1.0] * single.height
    # One episode per task: no pass^k figure (it would be one point per profile).
    assert "pass_k" not in {plot.name for plot in bundle.plots}


def test_unequal_repetitions_reach_the_bundle_as_a_warning() -> None:
    # Two runs of every scenario, then one run of ER-01 dropped for every profile.
    twice = ablation_standin(seeds=(0, 1)).episodes
    episodes = twice.filter(~((pl.col("scenario_id") == "ER-01") & (pl.col("seed") == 1)))
    bundle = compute_analysis(episodes, None, FAST)
    assert len(bundle.warnings) == 1
    assert "direct: 1 to 2;" in bundle.warnings[0]
    assert bundle.pass_k.filter(pl.col("k") == 2)["n_tasks"].unique().to_list() == [39]
