"""Report tables (Markdown, LaTeX booktabs, HTML) built from the metrics and contrasts frames.

A table is first a small typed model (:class:`ReportTable`: header, aligned columns, row
blocks, notes); the renderers only format it, so every version holds the same numbers.
LaTeX and HTML come from great_tables (polars' ``DataFrame.style``); Markdown is written
here because great_tables has no Markdown output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import polars as pl
from great_tables import GT

from analysis._bootstrap import BootstrapConfig
from analysis._contrasts import CONTRAST_COLUMNS
from analysis._vocab import IntervalMethod, Metric, SmallNMethod

_DASH = "–"


class Align(StrEnum):
    """Column alignment."""

    LEFT = "left"
    RIGHT = "right"
    CENTER = "center"


@dataclass(frozen=True)
class ReportTable:
    """A table as data: column headers and alignments, blocks of rows, a caption and notes.

    Rows within a block belong together (one profile); renderers separate blocks.
    """

    headers: tuple[str, ...]
    aligns: tuple[Align, ...]
    blocks: tuple[tuple[tuple[str, ...], ...], ...]
    caption: str = ""
    notes: tuple[str, ...] = ()
    label: str = ""


def fmt_rate(value: float | None, decimals: int = 3) -> str:
    """A rate with fixed decimals; ``None``/NaN as a dash and no negative zero.

    >>> fmt_rate(-0.0), fmt_rate(0.675), fmt_rate(None)
    ('0.000', '0.675', '–')
    """
    if value is None or math.isnan(value):
        return _DASH
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def fmt_interval(low: float | None, high: float | None, decimals: int = 3) -> str:
    """``[low, high]`` or a dash when undefined.

    >>> fmt_interval(0.8, 0.975)
    '[0.800, 0.975]'
    """
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return _DASH
    return f"[{fmt_rate(low, decimals)}, {fmt_rate(high, decimals)}]"


def _interval_legend(config: BootstrapConfig, n_tasks: Sequence[int]) -> str:
    tasks = ", ".join(str(t) for t in sorted(set(n_tasks)))
    strat = f", stratified by {config.stratify_by}" if config.stratify_by else ""
    if config.method is IntervalMethod.CLUSTER_T:
        return (
            f"Clustered: {config.level:.0%} cluster-robust t interval (CR1 standard error over "
            f"scenarios, t with T - 1 degrees of freedom{strat}); the unit is the scenario "
            f"({tasks} tasks), so repeated episodes of a scenario count once."
        )
    method = "BCa" if config.method is IntervalMethod.BCA else "percentile"
    return (
        f"Clustered: {config.level:.0%} task-clustered bootstrap interval ({method}, "
        f"{config.n_resamples:,} resamples, seed {config.seed}{strat}); the resampling unit is "
        f"the scenario ({tasks} tasks), all episodes of a drawn scenario stay together, and one "
        "draw serves every profile, so VG and PAVG come from the same resamples as their parts."
    )


def headline_table(
    metrics: pl.DataFrame,
    config: BootstrapConfig,
    *,
    groups: Sequence[str] = ("profile",),
    small_n: SmallNMethod = SmallNMethod.WILSON,
    caption: str = "Headline metrics per profile.",
    label: str = "tab:cavbench-headline",
) -> ReportTable:
    """The headline table: per group, estimate with ``k/n``, clustered and small-n intervals.

    ``metrics`` is :func:`analysis.headline_metrics`'s frame.
    """
    metric_names = [str(m) for m in Metric]
    first_label = " / ".join(groups) if groups else "group"
    headers = (first_label.replace("_", " ").capitalize(), "", "n", *metric_names)
    aligns = (Align.LEFT, Align.LEFT, Align.RIGHT, *(Align.CENTER for _ in metric_names))
    blocks = []
    labels: list[tuple[object, ...]] = list(
        dict.fromkeys(metrics.select(list(groups)).rows()) if groups else [()]
    )
    any_effective = False
    for key in labels:
        part = metrics
        for name, value in zip(groups, key, strict=True):
            part = part.filter(pl.col(name).eq_missing(value))
        by_metric = {row["metric"]: row for row in part.iter_rows(named=True)}
        first = next(iter(by_metric.values()))
        estimates, clustered, small = [], [], []
        for name in metric_names:
            row = by_metric.get(name)
            if row is None:
                estimates.append(_DASH)
                clustered.append(_DASH)
                small.append(_DASH)
                continue
            estimates.append(f"{fmt_rate(row['estimate'])} ({row['k']}/{row['n']})")
            clustered.append(fmt_interval(row["ci_low"], row["ci_high"]))
            small.append(fmt_interval(row["small_n_low"], row["small_n_high"]))
            n_eff = row["n_effective"]
            if n_eff is not None and abs(n_eff - row["n"]) > 1e-9:
                any_effective = True
        group_label = " / ".join(str(v) for v in key) or "all"
        level = f"{config.level:.0%}"
        blocks.append(
            (
                (group_label, "estimate (k/n)", str(first["n"]), *estimates),
                ("", f"{level} clustered", "", *clustered),
                ("", f"{level} {small_n.value.capitalize()}", "", *small),
            )
        )
    small_note = (
        f"{small_n.value.capitalize()}: score interval for a single rate"
        if small_n is SmallNMethod.WILSON
        else "Jeffreys: equal-tailed Beta(k+1/2, n-k+1/2) interval for a single rate"
    )
    small_note += (
        ", on k of the Kish effective n where episodes repeat within scenarios."
        if any_effective
        else " (one episode per scenario, so n is the number of scenarios)."
    )
    notes = [
        _interval_legend(config, metrics["n_tasks"].to_list()),
        small_note + " It stays informative at 0/n and n/n, where the bootstrap collapses.",
        "VG = OSR - CVSR and PAVG = PAOSR - CVSR; their k is the difference of the counts.",
    ]
    if "n_errors" in metrics.columns:
        per_group = metrics.unique(subset=list(groups) or None, keep="first", maintain_order=True)
        crashed = int(per_group["n_errors"].fill_null(0).sum())
        if crashed:
            notes.append(
                f"{crashed} episode(s) ended with an adapter error; they count as failures."
            )
    return ReportTable(headers, aligns, tuple(blocks), caption, tuple(notes), label)


def contrasts_table(
    contrasts: pl.DataFrame,
    note: str,
    config: BootstrapConfig,
    *,
    caption: str = "Paired differences between profiles, within scenario.",
    label: str = "tab:cavbench-contrasts",
) -> ReportTable:
    """One row per contrast: difference, clustered interval, discordant tasks, p-values."""
    within = [c for c in contrasts.columns if c not in _CONTRAST_COLUMNS]
    headers = (
        *(w.capitalize() for w in within),
        "Metric",
        "Contrast",
        "Difference",
        f"{config.level:.0%} clustered",
        "Tasks",
        "+/-",
        "McNemar p",
        "Permutation p",
        "Holm p (perm.)",
    )
    aligns = (
        *(Align.LEFT for _ in within),
        Align.LEFT,
        Align.LEFT,
        Align.RIGHT,
        Align.CENTER,
        Align.RIGHT,
        Align.RIGHT,
        Align.RIGHT,
        Align.RIGHT,
        Align.RIGHT,
    )
    rows = tuple(
        (
            *(str(row[w]) for w in within),
            row["metric"],
            f"{row['left']} - {row['right']}",
            fmt_rate(row["difference"]),
            fmt_interval(row["ci_low"], row["ci_high"]),
            str(row["n_tasks"]),
            f"{row['left_higher']}/{row['right_higher']}",
            fmt_p(row["mcnemar_p"]),
            fmt_p(row["permutation_p"]),
            fmt_p(row["permutation_p_holm"]),
        )
        for row in contrasts.iter_rows(named=True)
    )
    notes = [
        "+/-: scenarios where the left profile's per-scenario value is higher / lower than the "
        "right's (the discordant pairs; for a gap, higher is worse).",
        "McNemar: exact two-sided sign test on the discordant scenarios. Permutation: paired "
        "sign-flip test of the mean per-scenario difference.",
    ]
    if "permutation_method" in contrasts.columns:
        floors = contrasts.filter(pl.col("permutation_method") == "monte_carlo")
        if floors.height:
            notes.append(
                f"{floors.height} permutation p-value(s) from random sign flips: they cannot "
                f"fall below {float(floors['permutation_p_floor'].min()):.2g}; the others are exact."  # type: ignore[arg-type]
            )
    if note:
        notes.append(note)
    return ReportTable(headers, aligns, (rows,), caption, tuple(notes), label)


_CONTRAST_COLUMNS = frozenset(CONTRAST_COLUMNS)


def fmt_p(value: float | None) -> str:
    """A p-value with three decimals, or ``<0.001``.

    >>> fmt_p(0.0625), fmt_p(1.9e-9)
    ('0.062', '<0.001')
    """
    if value is None or math.isnan(value):
        return _DASH
    return "<0.001" if value < 0.0005 else f"{value:.3f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: ReportTable) -> str:
    """Render as a GitHub-flavoured Markdown table (padded to align), then the notes.

    >>> print(to_markdown(ReportTable(("A", "B"), (Align.LEFT, Align.RIGHT), ((("x", "1"),),))))
    | A | B |
    |:--|--:|
    | x | 1 |
    <BLANKLINE>
    """
    rows = [tuple(_md_escape(c) for c in table.headers)]
    body = [tuple(_md_escape(c) for c in row) for block in table.blocks for row in block]
    widths = [max(len(r[i]) for r in rows + body) for i in range(len(table.headers))]

    def line(cells: Sequence[str]) -> str:
        padded = []
        for cell, width, align in zip(cells, widths, table.aligns, strict=True):
            padded.append(cell.rjust(width) if align is Align.RIGHT else cell.ljust(width))
        return "| " + " | ".join(padded) + " |"

    rule = {Align.LEFT: ":{}", Align.RIGHT: "{}:", Align.CENTER: ":{}:"}
    separator = (
        "|"
        + "|".join(
            rule[a].format("-" * max(1, w + 2 - (2 if a is Align.CENTER else 1)))
            for a, w in zip(table.aligns, widths, strict=True)
        )
        + "|"
    )
    out = []
    if table.caption:
        out += [f"**{table.caption}**", ""]
    out += [line(rows[0]), separator, *(line(r) for r in body), ""]
    out += [f"- {note}" for note in table.notes]
    return "\n".join(out) + ("\n" if table.notes else "")


def to_great_table(table: ReportTable) -> GT:
    """The table as a great_tables ``GT`` (blocks become row groups, notes source notes).

    The HTML id is derived from the label, so the same table always renders the same bytes.
    """
    rows = [row for block in table.blocks for row in block]
    grouped = len(table.blocks) > 1
    skip = 1 if grouped else 0
    columns = list(table.headers[skip:])
    data: dict[str, list[str]] = {
        name: [row[i + skip] for row in rows] for i, name in enumerate(columns)
    }
    if grouped:
        data = {_GROUP: [block[0][0] for block in table.blocks for _ in block], **data}
    frame = pl.DataFrame(data, schema=dict.fromkeys(data, pl.String))
    table_id = (table.label or "cavbench-table").replace(":", "-")
    stub = columns[0] if grouped else None  # the row kind (estimate, clustered, ...)
    gt = GT(frame, rowname_col=stub, groupname_col=_GROUP if grouped else None, id=table_id)
    if grouped:
        gt = gt.tab_stubhead(table.headers[0])
    for align in Align:
        names = [n for n, a in zip(columns, table.aligns[skip:], strict=True) if a is align]
        if names:
            gt = gt.cols_align(str(align), columns=names)
    if table.caption:
        gt = gt.tab_header(title=table.caption)
    for note in table.notes:
        gt = gt.tab_source_note(note)
    return gt.tab_options(table_font_size="8pt")


_GROUP = "__block"


def to_latex(table: ReportTable) -> str:
    """Render as a booktabs ``table`` (great_tables' ``as_latex``; needs booktabs and caption).

    great_tables writes an unnumbered ``\\caption*``; it is made a numbered ``\\caption``
    with the table's ``\\label`` so the paper can refer to it.
    """
    latex = to_great_table(table).as_latex()
    if table.caption and table.label and "\\caption*{" in latex:
        head, rest = latex.split("\\caption*{", 1)
        caption, tail = rest.split("\n} \n", 1)
        latex = f"{head}\\caption{{{caption}}}\n\\label{{{table.label}}}\n{tail}"
    return latex if latex.endswith("\n") else latex + "\n"


def to_html(table: ReportTable) -> str:
    """Render as a self-contained HTML fragment (great_tables' ``as_raw_html``)."""
    html = to_great_table(table).as_raw_html()
    return html if html.endswith("\n") else html + "\n"
