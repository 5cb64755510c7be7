"""Figures: each writes SVG/PDF/PNG and the CSV of its numbers, byte-identical across runs."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest
from matplotlib.text import Text

from analysis import (
    BootstrapConfig,
    FigureFormat,
    Metric,
    Plot,
    SyntheticTables,
    dimension_breakdown,
    dimension_heatmap,
    family_heatmap,
    family_small_multiples,
    headline_metrics,
    osr_cvsr_dumbbell,
    paired_contrasts,
    paired_difference_figure,
    pass_hat_k,
    pass_k_figure,
    validity_gap_figure,
    write_plot,
)
from analysis._errors import AnalysisConfigError
from analysis._figures import COLUMN_WIDTH

FAST = BootstrapConfig(n_resamples=1_000, seed=0)


@pytest.fixture(scope="module")
def plots(ablation_repeated: SyntheticTables) -> list[Plot]:
    episodes = ablation_repeated.episodes
    metrics = headline_metrics(episodes, config=FAST).frame
    family = headline_metrics(
        episodes,
        ("profile", "family"),
        BootstrapConfig(n_resamples=1_000, stratify_by="family"),
    ).frame
    contrasts = paired_contrasts(episodes, metrics=[Metric.CVSR, Metric.VG], config=FAST).frame
    dimensions = dimension_breakdown(ablation_repeated.verdicts, episodes=episodes)
    return [
        validity_gap_figure(metrics),
        osr_cvsr_dumbbell(metrics),
        family_small_multiples(family),
        family_heatmap(family),
        paired_difference_figure(contrasts),
        dimension_heatmap(dimensions),
        pass_k_figure(pass_hat_k(episodes, config=FAST)),
    ]


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


@pytest.mark.slow  # draws every figure in three formats; the fast suite's analyze test
# (tests/pipelines/test_analyze.py::test_writes_every_output) writes them all too
def test_every_figure_writes_three_formats_and_its_numbers(
    plots: list[Plot], tmp_path: Path
) -> None:
    for plot in plots:
        written = write_plot(plot, tmp_path)
        assert [p.suffix for p in written] == [".svg", ".pdf", ".png", ".csv"]
        assert all(p.stat().st_size > 0 for p in written)
        assert pl.read_csv(tmp_path / f"{plot.name}.csv").height == plot.data.height
    assert {p.name for p in plots} == {
        "validity_gap",
        "osr_cvsr_dumbbell",
        "cvsr_vg_by_family",
        "cvsr_family_heatmap",
        "paired_differences",
        "dimension_fail_rates",
        "pass_k",
    }


def test_every_figure_fits_one_column_with_no_text_below_7_points(plots: list[Plot]) -> None:
    for plot in plots:
        width, _ = plot.figure.get_size_inches()
        assert width <= COLUMN_WIDTH + 1e-9, plot.name
        texts = [t for t in plot.figure.findobj(Text) if t.get_visible() and t.get_text()]
        assert texts, plot.name
        small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 7.0]
        assert not small, (plot.name, small)
        # Nothing is cut off at the figure's edge: everything drawn fits in the canvas (drawn
        # afresh first: a save at another dpi leaves stale positions behind).
        plot.figure.draw_without_rendering()
        drawn = plot.figure.get_tightbbox()  # inches
        assert drawn.x0 >= -0.01, plot.name
        assert drawn.y0 >= -0.01, plot.name
        assert drawn.x1 <= width + 0.01, plot.name
        assert drawn.y1 <= plot.figure.get_size_inches()[1] + 0.01, plot.name


def test_labels_go_through_the_pretty_mapping(plots: list[Plot]) -> None:
    figure = next(p for p in plots if p.name == "osr_cvsr_dumbbell").figure
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert labels == ["Direct", "Policy-gated", "Commit-guarded", "Reconciled", "Full lifecycle"]


def test_family_panels_are_a_two_by_two_grid_showing_cvsr_and_vg(plots: list[Plot]) -> None:
    plot = next(p for p in plots if p.name == "cvsr_vg_by_family")
    visible = [ax for ax in plot.figure.axes if ax.get_visible()]
    rows_columns = {ax.get_subplotspec().get_geometry()[:2] for ax in visible}
    assert rows_columns == {(2, 2)}
    assert set(plot.data["metric"].to_list()) == {"CVSR", "VG"}


def test_a_collapsed_interval_is_labelled_with_its_wilson_bound(ablation: SyntheticTables) -> None:
    # full_lifecycle's CVSR is 40/40: the bootstrap gives [1, 1]; Wilson's lower bound is .912.
    metrics = headline_metrics(ablation.episodes, config=FAST).frame
    figure = osr_cvsr_dumbbell(metrics).figure
    notes = [t.get_text() for t in figure.findobj(Text) if "Wilson" in t.get_text()]
    assert "CI [1, 1]; Wilson ≥.912" in notes


def test_forest_plot_shows_discordant_counts_holm_marks_and_direction(plots: list[Plot]) -> None:
    figure = next(p for p in plots if p.name == "paired_differences").figure
    texts = [t.get_text() for t in figure.findobj(Text)]
    # Repeated ablation: 30 discordant scenarios for full_lifecycle vs direct, Holm-significant.
    assert "30/0*" in texts
    assert "0/27*" in texts
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == [
        "CVSR: profile − Direct; higher is better",
        "VG: profile − Direct; lower is better",
    ]


def test_pass_k_figure_labels_each_k_with_its_task_count(plots: list[Plot]) -> None:
    figure = next(p for p in plots if p.name == "pass_k").figure
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert ticks == ["1\n40", "2\n40", "3\n40", "4\n40", "5\n40", "6\n40"]


@pytest.mark.slow  # several seconds: CI runs it (.ci/run), the fast suite does not
def test_the_same_numbers_give_byte_identical_files(
    ablation: SyntheticTables, tmp_path: Path
) -> None:
    """Build each figure afresh twice and save it twice: all four files are identical."""
    metrics = headline_metrics(ablation.episodes, config=FAST).frame
    for run in ("a", "b"):
        for plot in (validity_gap_figure(metrics), osr_cvsr_dumbbell(metrics)):
            write_plot(plot, tmp_path / run)
            write_plot(plot, tmp_path / f"{run}-again")
    digests = [_digests(tmp_path / d) for d in ("a", "a-again", "b", "b-again")]
    assert len(digests[0]) == 8
    assert all(d == digests[0] for d in digests)


def test_text_stays_text_and_no_dates_or_creator_are_embedded(
    plots: list[Plot], tmp_path: Path
) -> None:
    write_plot(plots[0], tmp_path)
    svg = (tmp_path / "validity_gap.svg").read_text(encoding="utf-8")
    assert "<text" in svg
    assert ">Direct</text>" in svg
    assert "<dc:date>" not in svg
    assert "Matplotlib" not in svg
    pdf = (tmp_path / "validity_gap.pdf").read_bytes()
    for key in (b"CreationDate", b"Producer", b"Creator"):
        assert key not in pdf
    assert b"DejaVuSans" in pdf  # TrueType embedded (pdf.fonttype 42), not outlines


def test_validity_gap_figure_draws_full_lifecycle_at_zero_and_direct_at_0_675(
    plots: list[Plot],
) -> None:
    data = plots[0].data
    vg = dict(
        zip(*data.filter(pl.col("metric") == "VG").select("profile", "estimate"), strict=True)
    )
    assert vg["full_lifecycle"] == 0.0
    assert vg["direct"] == 0.675
    assert data.filter(pl.col("metric") == "PAVG")["estimate"].to_list() == [
        0.5,
        0.5,
        0.25,
        0.125,
        0.0,
    ]


def test_only_the_requested_formats_are_written(plots: list[Plot], tmp_path: Path) -> None:
    written = write_plot(plots[-1], tmp_path, formats=(FigureFormat.SVG,))
    assert sorted(p.name for p in written) == ["pass_k.csv", "pass_k.svg"]


def test_a_frame_without_the_metrics_is_refused(ablation: SyntheticTables) -> None:
    metrics = headline_metrics(ablation.episodes, config=FAST).frame
    with pytest.raises(AnalysisConfigError, match="none of"):
        validity_gap_figure(metrics.filter(pl.col("metric") == "OSR"))


@pytest.mark.slow  # several seconds: CI runs it (.ci/run); the forest figure test stays fast
def test_every_figure_is_byte_identical_when_built_twice(
    ablation_repeated: SyntheticTables, tmp_path: Path
) -> None:
    episodes = ablation_repeated.episodes

    def build() -> list[Plot]:
        family = headline_metrics(
            episodes, ("profile", "family"), BootstrapConfig(n_resamples=200, stratify_by="family")
        ).frame
        contrasts = paired_contrasts(episodes, config=BootstrapConfig(n_resamples=200)).frame
        dimensions = dimension_breakdown(ablation_repeated.verdicts, episodes=episodes)
        return [
            family_small_multiples(family),
            family_heatmap(family),
            paired_difference_figure(contrasts),
            dimension_heatmap(dimensions),
        ]

    for run in ("a", "b"):
        for plot in build():
            write_plot(plot, tmp_path / run)
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")
    assert len(_digests(tmp_path / "a")) == 16
