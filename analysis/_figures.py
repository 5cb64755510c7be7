"""Figures: deterministic matplotlib output, each written beside the numbers it draws.

Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot, no global
backend) inside the project style (`cavbench.mplstyle`), and saved with empty date and
creator metadata, so the same numbers give byte-identical SVG, PDF and PNG files.

Every figure is drawn at single-column width (:data:`COLUMN_WIDTH`, 3.3 in) at its final
size, with no text below :data:`MIN_FONT_SIZE` (7 pt), so it needs no scaling in a paper.
Labels go through one mapping (:func:`analysis._vocab.pretty_label`). An interval that
collapses to a point (every resample alike, as at 0/n or n/n) is drawn as an open marker and
labelled with the closed-form Wilson bound beside it, since the collapsed interval says
nothing about the next task.
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from analysis._errors import AnalysisConfigError
from analysis._frames import ordered_levels
from analysis._intervals import wilson_interval
from analysis._vocab import DIMENSIONS, Metric, pretty_label, short_label

STYLE_FILE = "cavbench.mplstyle"
DECIMALS = 6
"""Numbers are rounded to this many decimals before they are drawn and written."""

_SAVE_METADATA: dict[str, dict[str, str | None]] = {
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
    "png": {"Software": None},
}
_PROFILE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_WILSON_COLOUR = "#8c8c8c"
_CONNECTOR_COLOUR = "#d9d9d9"
_METRIC_STYLE: dict[Metric, tuple[str, str]] = {
    Metric.OSR: ("#0072B2", "o"),
    Metric.PAOSR: ("#56B4E9", "^"),
    Metric.CVSR: ("#009E73", "D"),
    Metric.VG: ("#D55E00", "s"),
    Metric.PAVG: ("#CC79A7", "v"),
}
"""Colour (Okabe-Ito) and marker per metric, the same in every figure."""
COLUMN_WIDTH = 3.3
"""Single-column width in inches: every figure is drawn at this width."""
MIN_FONT_SIZE = 7.0
"""No text smaller than this (points), at the final size."""
_SMALL = 7.0


class FigureFormat(StrEnum):
    """File formats a figure is written in."""

    SVG = "svg"
    PDF = "pdf"
    PNG = "png"


@contextlib.contextmanager
def figure_style() -> Iterator[None]:
    """Apply the project style (package data ``analysis/cavbench.mplstyle``) temporarily."""
    style = resources.files("analysis").joinpath(STYLE_FILE)
    with resources.as_file(style) as path, mpl.rc_context(fname=str(path)):
        yield


@dataclass(frozen=True, eq=False)
class Plot:
    """A figure and the exact numbers it draws."""

    name: str
    figure: Figure
    data: pl.DataFrame


P_VALUE_SUFFIXES = ("_p", "_p_holm", "_p_floor")
"""Columns ending so hold p-values: rounded to significant digits, never to 0."""


def round_numbers(frame: pl.DataFrame, decimals: int = DECIMALS) -> pl.DataFrame:
    """Round every float column, so drawn and written numbers agree and ulp noise vanishes.

    p-value columns keep ``decimals`` significant digits instead, so a p of 2e-9 is written
    as such and not as 0.

    >>> round_numbers(pl.DataFrame({"x": [0.1 + 0.2], "mcnemar_p": [2.0**-29]})).row(0)
    (0.3, 1.86265e-09)
    """
    return frame.with_columns(
        pl.col(name).round_sig_figs(decimals)
        if name.endswith(P_VALUE_SUFFIXES)
        else pl.col(name).round(decimals)
        for name, dtype in frame.schema.items()
        if dtype.is_float()
    )


def _labels(frame: pl.DataFrame, columns: Sequence[str]) -> list[str]:
    return [" / ".join(pretty_label(v) for v in row) for row in frame.select(list(columns)).rows()]


def _new_figure(height: float, width: float = COLUMN_WIDTH) -> Figure:
    return Figure(figsize=(width, height))


def _finish(name: str, fig: Figure, data: pl.DataFrame) -> Plot:
    """Run the constrained layout once and freeze it, so every save draws the same geometry.

    (Left active, the layout engine runs again on each save and moves the axes by a hair,
    which changes the SVG clip-path ids and can shift an antialiased PNG edge.)
    """
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return Plot(name, fig, data)


def _check_metrics(frame: pl.DataFrame, metrics: Sequence[Metric], what: str) -> pl.DataFrame:
    subset = frame.filter(pl.col("metric").is_in([str(m) for m in metrics]))
    if subset.is_empty():
        raise AnalysisConfigError(f"{what}: the metrics frame holds none of {list(metrics)}")
    return subset


def _short(value: float) -> str:
    """A rate in three decimals without the leading zero (.912), as in the tables' notes."""
    text = f"{value:.3f}"
    return text[1:] if text.startswith("0.") else text


def _interval(
    ax: Axes,
    y: float,
    estimate: float,
    low: float | None,
    high: float | None,
    *,
    metric: Metric,
    wilson: tuple[float, float] | None = None,
    note_collapsed: bool = True,
    wilson_y: float | None = None,
) -> None:
    """One estimate with its clustered interval; a collapsed interval is an open marker.

    ``wilson`` is the closed-form interval shown beside a collapsed one (its bound that is
    away from the estimate): next to the marker, or at the outer end of the Wilson bar drawn
    at height ``wilson_y``.
    """
    colour, marker = _METRIC_STYLE[metric]
    if low is None or high is None or not np.isfinite(estimate):
        return
    collapsed = high - low <= 1e-12
    if not collapsed:
        ax.hlines(y, low, high, color=colour, linewidth=1.3, zorder=2)
    ax.plot(
        [estimate],
        [y],
        marker=marker,
        markersize=4.2,
        color=colour,
        markerfacecolor="white" if collapsed else colour,
        markeredgewidth=1.0,
        linestyle="none",
        zorder=3,
    )
    if collapsed and note_collapsed and wilson is not None:
        lo, hi = wilson
        high_end = estimate >= 0.5
        bound = f"≥{_short(lo)}" if high_end else f"≤{_short(hi)}"
        anchor = (estimate, y) if wilson_y is None else (lo if high_end else hi, wilson_y)
        ax.annotate(
            f"CI [{estimate:g}, {estimate:g}]; Wilson {bound}",
            anchor,
            xytext=(-5 if estimate >= 0.5 else 5, 0),
            textcoords="offset points",
            ha="right" if estimate >= 0.5 else "left",
            va="center",
            fontsize=_SMALL,
            color=colour,
        )


def _wilson_bar(ax: Axes, y: float, low: float | None, high: float | None) -> None:
    """A thin grey capped bar: the closed-form interval, distinct from the clustered one."""
    if low is None or high is None:
        return
    ax.plot(
        [low, high],
        [y, y],
        color=_WILSON_COLOUR,
        linewidth=0.7,
        marker="|",
        markersize=3.5,
        markeredgewidth=0.7,
        zorder=1,
    )


def _gap_wilson(row: dict[str, object]) -> tuple[float, float] | None:
    """Wilson interval of a gap's count (episodes that reached the outcome with an invalid
    commit are a share of all episodes too), used only to label a collapsed gap interval."""
    k, n = row.get("k"), row.get("n")
    if not isinstance(k, int) or not isinstance(n, int) or not 0 <= k <= n or n == 0:
        return None
    interval = wilson_interval(k, n)
    return interval.low, interval.high


def _row_wilson(row: dict[str, object], metric: Metric) -> tuple[float, float] | None:
    if metric.is_gap:
        return _gap_wilson(row)
    low, high = row.get("small_n_low"), row.get("small_n_high")
    if isinstance(low, float) and isinstance(high, float):
        return low, high
    return None


def _legend_handles(ax: Axes, metrics: Sequence[Metric], *, wilson: bool) -> None:
    for metric in metrics:
        colour, marker = _METRIC_STYLE[metric]
        ax.plot([], [], marker=marker, color=colour, markersize=4.2, label=str(metric))
    if wilson:
        ax.plot(
            [],
            [],
            color=_WILSON_COLOUR,
            linewidth=0.7,
            marker="|",
            markersize=3.5,
            label="Wilson",
        )


def _rows(data: pl.DataFrame, groups: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(_labels(data, groups)))


def _row_axis(ax: Axes, labels: Sequence[str]) -> None:
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)


def validity_gap_figure(metrics: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """Dot-and-interval plot of VG and PAVG: one row per group, a zero line, values printed.

    ``metrics`` is :func:`analysis.headline_metrics`'s frame.
    """
    data = round_numbers(
        _check_metrics(metrics, (Metric.VG, Metric.PAVG), "validity_gap_figure").select(
            *groups, "metric", "estimate", "ci_low", "ci_high", "k", "n"
        )
    )
    labels = _rows(data, groups)
    with figure_style():
        fig = _new_figure(0.36 * len(labels) + 1.0)
        ax = fig.add_subplot()
        ax.axvline(0.0, color="#444444", linewidth=0.7, zorder=0)
        for offset, metric in ((-0.15, Metric.VG), (0.15, Metric.PAVG)):
            part = data.filter(pl.col("metric") == str(metric))
            for label, row in zip(_labels(part, groups), part.iter_rows(named=True), strict=True):
                y = labels.index(label) + offset
                _interval(
                    ax,
                    y,
                    row["estimate"],
                    row["ci_low"],
                    row["ci_high"],
                    metric=metric,
                    wilson=_gap_wilson(row),
                )
                if row["ci_high"] is not None and row["ci_high"] - row["ci_low"] > 1e-12:
                    ax.annotate(
                        f"{row['estimate']:.3f}",
                        (row["ci_high"], y),
                        xytext=(3, 0),
                        textcoords="offset points",
                        va="center",
                        fontsize=_SMALL,
                        color=_METRIC_STYLE[metric][0],
                    )
        _row_axis(ax, labels)
        lowest = data["ci_low"].drop_nulls().drop_nans().to_numpy()
        ax.set_xlim(min(-0.05, (float(lowest.min()) if lowest.size else 0.0) - 0.05), 1.0)
        ax.set_xlabel("validity gap, 95% task-clustered CI")
        _legend_handles(ax, (Metric.VG, Metric.PAVG), wilson=False)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2)
        return _finish("validity_gap", fig, data)


def osr_cvsr_dumbbell(metrics: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """Dumbbell per group from CVSR to OSR: the straight pale bar between them is the gap.

    The clustered interval of each rate is the thin coloured line through its dot; the Wilson
    interval is the thin grey capped line just above (OSR) or below (CVSR) the row.
    """
    data = round_numbers(
        _check_metrics(metrics, (Metric.OSR, Metric.CVSR), "osr_cvsr_dumbbell").select(
            *groups,
            "metric",
            "estimate",
            "ci_low",
            "ci_high",
            "small_n_low",
            "small_n_high",
            "k",
            "n",
        )
    )
    labels = _rows(data, groups)
    with figure_style():
        fig = _new_figure(0.42 * len(labels) + 1.0)
        ax = fig.add_subplot()
        ax.grid(False, axis="y")
        wide = {m: data.filter(pl.col("metric") == str(m)) for m in (Metric.OSR, Metric.CVSR)}
        ends: dict[str, dict[Metric, float]] = {}
        for metric, wilson_offset in ((Metric.OSR, -0.27), (Metric.CVSR, 0.27)):
            part = wide[metric]
            for label, row in zip(_labels(part, groups), part.iter_rows(named=True), strict=True):
                y = labels.index(label)
                ends.setdefault(label, {})[metric] = row["estimate"]
                _wilson_bar(ax, y + wilson_offset, row["small_n_low"], row["small_n_high"])
                _interval(
                    ax,
                    y,
                    row["estimate"],
                    row["ci_low"],
                    row["ci_high"],
                    metric=metric,
                    wilson=_row_wilson(row, metric),
                    wilson_y=y + wilson_offset,
                )
        for label, pair in ends.items():
            if len(pair) == 2:
                ax.plot(
                    [pair[Metric.CVSR], pair[Metric.OSR]],
                    [labels.index(label)] * 2,
                    color=_CONNECTOR_COLOUR,
                    linewidth=5.0,
                    solid_capstyle="butt",
                    zorder=0,
                )
        _row_axis(ax, labels)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("rate, 95% task-clustered CI (pale bar: VG)")
        _legend_handles(ax, (Metric.OSR, Metric.CVSR), wilson=True)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3)
        return _finish("osr_cvsr_dumbbell", fig, data)


def family_small_multiples(
    family_metrics: pl.DataFrame,
    *,
    metrics: Sequence[Metric] = (Metric.CVSR, Metric.VG),
    group: str = "profile",
    facet: str = "family",
) -> Plot:
    """One panel per family (a 2-column grid): each metric per profile with its intervals.

    The clustered interval is the coloured line; the Wilson interval of a rate is the thin
    grey capped line beside it.
    """
    data = round_numbers(
        _check_metrics(family_metrics, metrics, "family_small_multiples").select(
            facet,
            group,
            "metric",
            "estimate",
            "ci_low",
            "ci_high",
            "small_n_low",
            "small_n_high",
            "k",
            "n",
        )
    )
    facets = ordered_levels(data, facet)
    levels = ordered_levels(data, group)
    labels = [pretty_label(v) for v in levels]
    n_cols = 2 if len(facets) > 1 else 1
    n_rows = -(-len(facets) // n_cols)
    step = 0.34 if len(metrics) > 1 else 0.0
    offsets = [step * (i - (len(metrics) - 1) / 2) for i in range(len(metrics))]
    with figure_style():
        fig = _new_figure(n_rows * (0.21 * len(levels) * max(1, len(metrics) * 0.75) + 0.45) + 0.5)
        axes = fig.subplots(n_rows, n_cols, sharex=True, sharey=True, squeeze=False)
        for index, ax in enumerate(axes.ravel()):
            if index >= len(facets):
                ax.set_visible(False)
                continue
            value = facets[index]
            part = data.filter(pl.col(facet) == value)
            ax.grid(False, axis="y")
            for metric, offset in zip(metrics, offsets, strict=True):
                rows = part.filter(pl.col("metric") == str(metric))
                for row in rows.iter_rows(named=True):
                    y = levels.index(row[group]) + offset
                    if not metric.is_gap:
                        _wilson_bar(ax, y + 0.13, row["small_n_low"], row["small_n_high"])
                    _interval(
                        ax,
                        y,
                        row["estimate"],
                        row["ci_low"],
                        row["ci_high"],
                        metric=metric,
                        note_collapsed=False,
                    )
            ax.set_title(pretty_label(value), fontsize=_SMALL + 1)
            ax.set_xlim(-0.05, 1.05)
            ax.set_xticks([0.0, 0.5, 1.0], ["0", ".5", "1"])
        for row_axes in axes:
            _row_axis(row_axes[0], labels)
        _legend_handles(axes[0][0], metrics, wilson=True)
        fig.legend(loc="outside upper center", ncols=len(metrics) + 1)
        fig.supxlabel("rate or gap; 95% clustered CI (open: collapsed)", fontsize=_SMALL)
        name = "_".join(str(m).lower() for m in metrics)
        return _finish(f"{name}_by_{facet}", fig, data)


_SEQUENTIAL = LinearSegmentedColormap.from_list("cavbench_blues", ["#f7fbff", "#08519c"])
_DIVERGING_BAD = LinearSegmentedColormap.from_list("cavbench_reds", ["#fff5eb", "#a63603"])


def _heatmap(
    ax: Axes,
    values: np.ndarray,
    texts: list[list[str]],
    rows: Sequence[str],
    columns: Sequence[str],
    cmap: LinearSegmentedColormap,
    *,
    slanted: bool = False,
) -> None:
    """Cells with centred text; ``slanted`` tilts the column labels so narrow columns with
    long names do not run into each other."""
    masked = np.ma.masked_invalid(values)
    ax.pcolormesh(masked, cmap=cmap, vmin=0.0, vmax=1.0, edgecolors="white", linewidth=1.0)
    for i, row in enumerate(texts):
        for j, text in enumerate(row):
            dark = np.isfinite(values[i, j]) and values[i, j] > 0.6
            ax.text(
                j + 0.5,
                i + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=_SMALL,
                color="white" if dark else "#222222",
                linespacing=1.1,
            )
    ax.set_xticks(np.arange(len(columns)) + 0.5, [textwrap.fill(c, 10) for c in columns])
    ax.set_yticks(np.arange(len(rows)) + 0.5, list(rows))
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(rows), 0)
    ax.tick_params(axis="x", length=0, labeltop=True, labelbottom=False)
    ax.tick_params(axis="y", length=0)
    if slanted:
        for label in ax.get_xticklabels():
            label.set(rotation=30, ha="left", rotation_mode="anchor")
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def family_heatmap(
    family_metrics: pl.DataFrame,
    *,
    metric: Metric = Metric.CVSR,
    group: str = "profile",
    facet: str = "family",
) -> Plot:
    """Profile x family heatmap of one rate, each cell labelled with the rate and ``k/n``."""
    data = round_numbers(
        _check_metrics(family_metrics, (metric,), "family_heatmap").select(
            group, facet, "metric", "estimate", "k", "n"
        )
    )
    levels, facets = ordered_levels(data, group), ordered_levels(data, facet)
    values = np.full((len(levels), len(facets)), np.nan)
    texts = [["" for _ in facets] for _ in levels]
    for row in data.iter_rows(named=True):
        i, j = levels.index(row[group]), facets.index(row[facet])
        values[i, j] = row["estimate"]
        texts[i][j] = f"{row['estimate']:.2f}\n{row['k']}/{row['n']}"
    with figure_style():
        fig = _new_figure(0.32 * len(levels) + 1.0)
        ax = fig.add_subplot()
        _heatmap(
            ax,
            values,
            texts,
            [pretty_label(v) for v in levels],
            [pretty_label(v) for v in facets],
            _SEQUENTIAL,
        )
        ax.set_xlabel(f"{metric} per {facet} (rate, k/n episodes)")
        return _finish(f"{str(metric).lower()}_{facet}_heatmap", fig, data)


def dimension_heatmap(dimensions: pl.DataFrame, group: str = "profile") -> Plot:
    """Profile x validity dimension heatmap of the fail rate among applicable verdicts.

    ``dimensions`` is :func:`analysis.dimension_breakdown`'s frame; each cell shows the fail
    rate and ``failed/applicable``; a dimension that never applied is blank.
    """
    if dimensions.is_empty():
        raise AnalysisConfigError("dimension_heatmap: no verdicts to draw")
    data = round_numbers(dimensions.select(group, "dimension", "failed", "applicable", "fail_rate"))
    levels = ordered_levels(data, group)
    present = set(data["dimension"].to_list())
    dims = [d for d in DIMENSIONS if d in present] + sorted(present - set(DIMENSIONS))
    values = np.full((len(levels), len(dims)), np.nan)
    texts = [["" for _ in dims] for _ in levels]
    for row in data.iter_rows(named=True):
        i, j = levels.index(row[group]), dims.index(row["dimension"])
        if row["fail_rate"] is None:
            texts[i][j] = "n/a"
            continue
        values[i, j] = row["fail_rate"]
        texts[i][j] = f"{row['fail_rate']:.2f}\n{row['failed']}/{row['applicable']}"
    with figure_style():
        fig = _new_figure(0.32 * len(levels) + 1.15)
        ax = fig.add_subplot()
        _heatmap(
            ax,
            values,
            texts,
            [pretty_label(v) for v in levels],
            [short_label(d) for d in dims],
            _DIVERGING_BAD,
            slanted=True,
        )
        ax.set_xlabel("fail rate per dimension (failed/applicable)")
        return _finish("dimension_fail_rates", fig, data)


def paired_difference_figure(contrasts: pl.DataFrame, *, alpha: float = 0.05) -> Plot:
    """Forest plot of paired differences: one panel per metric, one row per contrast.

    Each row shows the difference with its clustered interval; at the right, the discordant
    scenarios (``+a/-b``: left better / worse per scenario, for a rate) and a ``*`` where the
    Holm-adjusted permutation p-value is below ``alpha``. Each panel's title says which
    direction is better. ``contrasts`` is :func:`analysis.paired_contrasts`'s frame.
    """
    if contrasts.is_empty():
        raise AnalysisConfigError("paired_difference_figure: no contrasts to draw")
    columns = [
        "metric",
        "left",
        "right",
        "difference",
        "ci_low",
        "ci_high",
        "n_tasks",
        "left_higher",
        "right_higher",
        "mcnemar_p",
        "permutation_p",
        "permutation_p_holm",
    ]
    if "excluded" in contrasts.columns:
        columns.append("excluded")
    data = round_numbers(contrasts.select(columns))
    metrics = [Metric(m) for m in dict.fromkeys(data["metric"].to_list())]
    sizes = [data.filter(pl.col("metric") == str(m)).height for m in metrics]
    with figure_style():
        fig = _new_figure(sum(0.26 * n + 0.42 for n in sizes) + 0.55)
        axes = fig.subplots(
            len(metrics), 1, sharex=True, squeeze=False, height_ratios=[n + 1.2 for n in sizes]
        )[:, 0]
        for ax, metric in zip(axes, metrics, strict=True):
            part = data.filter(pl.col("metric") == str(metric))
            rights = set(part["right"].to_list())
            single_reference = len(rights) == 1
            labels = [
                pretty_label(a) if single_reference else f"{pretty_label(a)} − {pretty_label(b)}"
                for a, b in part.select("left", "right").rows()
            ]
            ax.axvline(0.0, color="#444444", linewidth=0.7, zorder=0)
            ax.grid(False, axis="y")
            side = blended_transform_factory(ax.transAxes, ax.transData)
            for y, row in enumerate(part.iter_rows(named=True)):
                if row.get("excluded"):
                    ax.text(
                        0.5,
                        y,
                        "not tested: no shared scenario",
                        transform=side,
                        ha="center",
                        va="center",
                        fontsize=_SMALL,
                        color="#666666",
                    )
                    continue
                _interval(
                    ax,
                    y,
                    row["difference"],
                    row["ci_low"],
                    row["ci_high"],
                    metric=metric,
                    note_collapsed=False,
                )
                holm = row["permutation_p_holm"]
                mark = "*" if holm is not None and holm < alpha else ""
                ax.text(
                    1.02,
                    y,
                    f"{row['left_higher']}/{row['right_higher']}{mark}",
                    transform=side,
                    ha="left",
                    va="center",
                    fontsize=_SMALL,
                )
            _row_axis(ax, labels)
            better = "lower" if metric.is_gap else "higher"
            versus = f" − {pretty_label(next(iter(rights)))}" if single_reference else ""
            ax.set_title(f"{metric}: profile{versus}; {better} is better", fontsize=_SMALL + 1)
            ax.set_xlim(-1.05, 1.05)
        axes[-1].set_xlabel(
            f"paired difference, 95% clustered CI\n+/−: discordant scenarios; *: Holm p < {alpha:g}"
        )
        return _finish("paired_differences", fig, data)


def pass_k_figure(pass_k: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """pass^k against k, one line per group, with interval bars and the task count per k.

    ``pass_k`` is :func:`analysis.pass_hat_k`'s frame; rows with no eligible task (null
    estimate) are not drawn.
    """
    data = round_numbers(
        pass_k.filter(pl.col("estimate").is_not_null()).select(
            *groups, "flag", "k", "estimate", "ci_low", "ci_high", "n_tasks"
        )
    )
    if data.is_empty():
        raise AnalysisConfigError("pass_k_figure: no pass^k values to draw")
    labels = _rows(data, groups)
    ks = sorted(set(data["k"].to_list()))
    tick_labels = []
    for k in ks:
        counts = data.filter(pl.col("k") == k)["n_tasks"]
        low, high = int(counts.min()), int(counts.max())  # type: ignore[arg-type]
        tick_labels.append(f"{k}\n{low}" if low == high else f"{k}\n{low}–{high}")
    with figure_style():
        fig = _new_figure(2.6)
        ax = fig.add_subplot()
        spread = 0.06 if len(labels) > 1 else 0.0
        row_labels = _labels(data, groups)
        for i, label in enumerate(labels):
            part = data.filter(pl.Series([lab == label for lab in row_labels]))
            x = part["k"].to_numpy().astype(float) + spread * (i - (len(labels) - 1) / 2)
            est = part["estimate"].to_numpy()
            colour = _PROFILE_COLOURS[i % len(_PROFILE_COLOURS)]
            ax.errorbar(
                x,
                est,
                yerr=np.vstack([est - part["ci_low"].to_numpy(), part["ci_high"].to_numpy() - est]),
                fmt="o-",
                color=colour,
                markersize=3.5,
                label=label,
            )
        ax.set_xticks(ks, tick_labels)
        ax.set_xlim(min(ks) - 0.5, max(ks) + 0.5)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(True, axis="y")
        ax.set_xlabel("k (repeats that must all succeed)\ntasks with ≥ k runs under each k")
        ax.set_ylabel(f"pass^k ({pretty_label(data['flag'][0])})")
        columns = 3 if max(len(label) for label in labels) <= 10 else 2
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=min(columns, len(labels)))
        return _finish("pass_k", fig, data)


def write_plot(
    plot: Plot,
    directory: Path,
    formats: Sequence[FigureFormat] = tuple(FigureFormat),
) -> tuple[Path, ...]:
    """Write ``<name>.<fmt>`` for each format and ``<name>.csv`` with the drawn numbers."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    with figure_style():
        for fmt in formats:
            path = directory / f"{plot.name}.{fmt}"
            plot.figure.savefig(path, format=str(fmt), metadata=_SAVE_METADATA[str(fmt)])
            written.append(path)
    csv = directory / f"{plot.name}.csv"
    plot.data.write_csv(csv)
    written.append(csv)
    return tuple(written)
