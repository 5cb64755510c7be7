"""Figures: deterministic matplotlib output, each written beside the numbers it draws.

Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot, no global
backend) inside the project style (`cavbench.mplstyle`), and saved with empty date and
creator metadata, so the same numbers give byte-identical SVG, PDF and PNG files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis._errors import AnalysisConfigError
from analysis._frames import ordered_levels
from analysis._vocab import Metric

STYLE_FILE = "cavbench.mplstyle"
DECIMALS = 6
"""Numbers are rounded to this many decimals before they are drawn and written."""

_SAVE_METADATA: dict[str, dict[str, str | None]] = {
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
    "png": {"Software": None},
}
_PROFILE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_WILSON_COLOUR = "#9a9a9a"
_WILSON_OFFSET = 0.09
"""Wilson bars sit just below the bootstrap bar, so neither hides the other."""


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
    return [" / ".join(str(v) for v in row) for row in frame.select(list(columns)).rows()]


def _new_figure(width: float, height: float) -> Figure:
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


def _interval_bars(
    ax: Axes,
    y: np.ndarray,
    estimate: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    *,
    colour: str,
    marker: str,
    label: str,
) -> None:
    ax.errorbar(
        estimate,
        y,
        xerr=np.vstack([estimate - low, high - estimate]),
        fmt=marker,
        color=colour,
        ecolor=colour,
        elinewidth=1.4,
        markersize=4.5,
        label=label,
    )


def validity_gap_figure(metrics: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """Dot-and-interval plot of VG and PAVG: one row per group, a zero line, values printed.

    ``metrics`` is :func:`analysis.headline_metrics`'s frame.
    """
    data = round_numbers(
        _check_metrics(metrics, (Metric.VG, Metric.PAVG), "validity_gap_figure").select(
            *groups, "metric", "estimate", "ci_low", "ci_high", "k", "n"
        )
    )
    labels = list(dict.fromkeys(_labels(data, groups)))
    with figure_style():
        fig = _new_figure(4.2, 0.42 * len(labels) + 0.9)
        ax = fig.add_subplot()
        ax.axvline(0.0, color="#444444", linewidth=0.7, zorder=0)
        for offset, metric, colour, marker in (
            (-0.14, Metric.VG, _PROFILE_COLOURS[1], "o"),
            (0.14, Metric.PAVG, _PROFILE_COLOURS[0], "s"),
        ):
            part = data.filter(pl.col("metric") == str(metric))
            if part.is_empty():
                continue
            rows = np.array([labels.index(lab) for lab in _labels(part, groups)], dtype=float)
            est = part["estimate"].to_numpy()
            _interval_bars(
                ax,
                rows + offset,
                est,
                part["ci_low"].to_numpy(),
                part["ci_high"].to_numpy(),
                colour=colour,
                marker=marker,
                label=str(metric),
            )
            for yy, value, hi in zip(rows + offset, est, part["ci_high"].to_numpy(), strict=True):
                ax.annotate(
                    f"{value:.3f}",
                    (hi, yy),
                    xytext=(4, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=6.5,
                    color=colour,
                )
        ax.set_yticks(range(len(labels)), labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        lowest = data["ci_low"].drop_nulls().drop_nans().to_numpy()
        ax.set_xlim(min(-0.05, (float(lowest.min()) if lowest.size else 0.0) - 0.05), 1.0)
        ax.set_xlabel("validity gap (rate difference), 95% task-clustered interval")
        ax.legend(loc="lower right")
        return _finish("validity_gap", fig, data)


def osr_cvsr_dumbbell(metrics: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """Dumbbell per group from CVSR to OSR (the validity gap is the bar between them)."""
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
    labels = list(dict.fromkeys(_labels(data, groups)))
    with figure_style():
        fig = _new_figure(4.2, 0.42 * len(labels) + 0.9)
        ax = fig.add_subplot()
        wide = {m: data.filter(pl.col("metric") == str(m)) for m in (Metric.OSR, Metric.CVSR)}
        for metric, colour, marker, offset in (
            (Metric.OSR, _PROFILE_COLOURS[0], "o", -0.12),
            (Metric.CVSR, _PROFILE_COLOURS[1], "D", 0.12),
        ):
            part = wide[metric]
            rows = np.array([labels.index(lab) for lab in _labels(part, groups)], dtype=float)
            est = part["estimate"].to_numpy()
            ax.hlines(
                rows + offset + _WILSON_OFFSET,
                part["small_n_low"].to_numpy(),
                part["small_n_high"].to_numpy(),
                color=_WILSON_COLOUR,
                linewidth=1.0,
                label="Wilson 95%" if metric is Metric.OSR else "_nolegend_",
            )
            _interval_bars(
                ax,
                rows + offset,
                est,
                part["ci_low"].to_numpy(),
                part["ci_high"].to_numpy(),
                colour=colour,
                marker=marker,
                label=str(metric),
            )
        osr, cvsr = wide[Metric.OSR], wide[Metric.CVSR]
        joined = osr.select(*groups, pl.col("estimate").alias("osr")).join(
            cvsr.select(*groups, pl.col("estimate").alias("cvsr")), on=list(groups)
        )
        for label, lo, hi in zip(
            _labels(joined, groups), joined["cvsr"].to_list(), joined["osr"].to_list(), strict=True
        ):
            y = labels.index(label)
            ax.plot([lo, hi], [y + 0.12, y - 0.12], color="#bbbbbb", linewidth=1.6, zorder=0)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("rate, 95% task-clustered interval (thin grey: Wilson)")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3)
        return _finish("osr_cvsr_dumbbell", fig, data)


def family_small_multiples(
    family_metrics: pl.DataFrame,
    *,
    metric: Metric = Metric.CVSR,
    group: str = "profile",
    facet: str = "family",
) -> Plot:
    """One panel per family: the metric per profile with bootstrap and Wilson intervals."""
    data = round_numbers(
        _check_metrics(family_metrics, (metric,), "family_small_multiples").select(
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
    with figure_style():
        fig = _new_figure(1.75 * len(facets) + 1.0, 0.3 * len(levels) + 1.0)
        axes = fig.subplots(1, len(facets), sharey=True, squeeze=False)[0]
        for ax, value in zip(axes, facets, strict=True):
            part = data.filter(pl.col(facet) == value)
            rows = np.array([levels.index(v) for v in part[group].to_list()], dtype=float)
            ax.hlines(
                rows + _WILSON_OFFSET,
                part["small_n_low"].to_numpy(),
                part["small_n_high"].to_numpy(),
                color=_WILSON_COLOUR,
                linewidth=1.0,
            )
            _interval_bars(
                ax,
                rows,
                part["estimate"].to_numpy(),
                part["ci_low"].to_numpy(),
                part["ci_high"].to_numpy(),
                colour=_PROFILE_COLOURS[0],
                marker="o",
                label=str(metric),
            )
            ax.set_title(str(value).replace("_", " "))
            ax.set_xlim(-0.05, 1.05)
            ax.set_xticks([0.0, 0.5, 1.0])
        axes[0].set_yticks(range(len(levels)), [str(v) for v in levels])
        axes[0].set_ylim(len(levels) - 0.5, -0.5)
        fig.supxlabel(f"{metric} (dot: estimate; bar: 95% clustered; grey: Wilson)", fontsize=7)
        return _finish(f"{str(metric).lower()}_by_{facet}", fig, data)


def paired_difference_figure(contrasts: pl.DataFrame) -> Plot:
    """Differences against a reference (one panel per metric) with intervals and zero line.

    ``contrasts`` is :func:`analysis.paired_contrasts`'s frame.
    """
    if contrasts.is_empty():
        raise AnalysisConfigError("paired_difference_figure: no contrasts to draw")
    data = round_numbers(
        contrasts.select(
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
        )
    )
    metrics = list(dict.fromkeys(data["metric"].to_list()))
    labels = list(dict.fromkeys(f"{a} - {b}" for a, b in data.select("left", "right").rows()))
    with figure_style():
        fig = _new_figure(2.3 * len(metrics) + 1.6, 0.38 * len(labels) + 0.9)
        axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
        for ax, metric in zip(axes, metrics, strict=True):
            part = data.filter(pl.col("metric") == metric)
            rows = np.array(
                [labels.index(f"{a} - {b}") for a, b in part.select("left", "right").rows()],
                dtype=float,
            )
            ax.axvline(0.0, color="#444444", linewidth=0.7, zorder=0)
            _interval_bars(
                ax,
                rows,
                part["difference"].to_numpy(),
                part["ci_low"].to_numpy(),
                part["ci_high"].to_numpy(),
                colour=_PROFILE_COLOURS[2],
                marker="o",
                label=metric,
            )
            ax.set_title(f"{metric} difference")
            ax.set_xlim(-1.05, 1.05)
        axes[0].set_yticks(range(len(labels)), labels)
        axes[0].set_ylim(len(labels) - 0.5, -0.5)
        fig.supxlabel("paired difference within task, 95% task-clustered interval", fontsize=7)
        return _finish("paired_differences", fig, data)


def pass_k_figure(pass_k: pl.DataFrame, groups: Sequence[str] = ("profile",)) -> Plot:
    """pass^k against k, one line per group, with interval bars.

    ``pass_k`` is :func:`analysis.pass_hat_k`'s frame.
    """
    if pass_k.is_empty():
        raise AnalysisConfigError("pass_k_figure: no pass^k values to draw")
    data = round_numbers(
        pass_k.select(*groups, "flag", "k", "estimate", "ci_low", "ci_high", "n_tasks")
    )
    labels = list(dict.fromkeys(_labels(data, groups)))
    ks = sorted(set(data["k"].to_list()))
    with figure_style():
        fig = _new_figure(4.6, 2.6)
        ax = fig.add_subplot()
        spread = 0.06 if len(labels) > 1 else 0.0
        for i, label in enumerate(labels):
            mask = [lab == label for lab in _labels(data, groups)]
            part = data.filter(pl.Series(mask))
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
        ax.set_xticks(ks)
        ax.set_xlim(min(ks) - 0.5, max(ks) + 0.5)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(True, axis="y")
        ax.set_xlabel("k (repeats that must all succeed)")
        ax.set_ylabel(f"pass^k ({data['flag'][0]})")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
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
