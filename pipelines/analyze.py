"""The analysis stage: a sweep's tables in, metrics, report tables and figures out.

`cavbench analyze SWEEP_DIR --out DIR` reads the sweep's `episodes` and `verdicts` tables and
writes, into DIR (replaced as a whole, never left half-written):

- `metrics.parquet` (headline metrics per group, long form), `metrics_by_family.parquet`,
  `contrasts.parquet`, `pass_k.parquet`, `failure_codes.parquet`, `dimensions.parquet`;
- `headline.md` / `.tex` / `.html` and `contrasts.md` / `.tex` / `.html`;
- `figures/` (SVG, PDF, PNG, and beside each the CSV of the numbers it draws);
- `analysis_manifest.json`: the inputs with their checksums, every parameter (seed,
  resamples, level, method, ...), library versions, and the checksum of every output.

The computing half (:func:`compute_analysis`) is shared with :mod:`pipelines.paper`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from analysis import (
    AnalysisWarning,
    BootstrapConfig,
    ContrastsResult,
    FigureFormat,
    Metric,
    MetricsResult,
    Plot,
    ReportTable,
    SmallNMethod,
    SuccessFlag,
    SweepTables,
    contrasts_table,
    dimension_breakdown,
    dimension_heatmap,
    failure_code_breakdown,
    family_heatmap,
    family_small_multiples,
    headline_metrics,
    headline_table,
    osr_cvsr_dumbbell,
    paired_contrasts,
    paired_difference_figure,
    pass_hat_k,
    pass_k_figure,
    rated_episodes,
    read_sweep,
    sha256_file,
    to_html,
    to_latex,
    to_markdown,
    usage_summary,
    validity_gap_figure,
    write_plot,
)
from analysis._bootstrap import DEFAULT_CONFIG
from analysis._errors import AnalysisConfigError
from analysis._factors import (
    FactorEffects,
    factor_column,
    factor_effects,
    factor_effects_table,
    factor_forest_figure,
)
from analysis._figures import round_numbers
from analysis._frames import UNPOOLABLE_COLUMNS, check_single_valued, ordered_levels
from cavbench.provenance import environment_facts
from cavbench.tables import SweepLayout, verify_sweep

ANALYSIS_MANIFEST = "analysis_manifest.json"
FIGURES = "figures"
LIBRARIES = ("cavbench", "numpy", "scipy", "polars", "pyarrow", "matplotlib")


@dataclass(frozen=True)
class AnalyzeOptions:
    """Everything that changes the numbers of an analysis (all recorded in the manifest)."""

    group_by: tuple[str, ...] = ("profile",)
    """Columns the metrics are grouped by; empty: chosen from the data (`default_group_by`)."""
    where: tuple[tuple[str, str], ...] = ()
    """``(column, value)`` filters applied first (values compared as text)."""
    bootstrap: BootstrapConfig = DEFAULT_CONFIG
    small_n: SmallNMethod = SmallNMethod.WILSON
    reference: str | None = None
    """Level every other level is contrasted with (default: the first in canonical order)."""
    contrast_metrics: tuple[Metric, ...] = (Metric.CVSR, Metric.VG)
    permutation_resamples: int = 9_999
    pass_k_flag: SuccessFlag = SuccessFlag.COMMIT_VALID
    formats: tuple[FigureFormat, ...] = tuple(FigureFormat)
    allow_incomplete: bool = False
    """Leave out cells that are unfinished or fail their checksums (listed) instead of refusing."""
    factor: str | None = None
    """A swept key whose levels are compared with ``baseline`` (see `docs/harness-factors.md`)."""
    baseline: str | None = None
    confirmatory: bool = False
    """The factor analysis is the pre-registered confirmatory one (else flagged exploratory)."""

    def __post_init__(self) -> None:
        if isinstance(self.group_by, str):
            raise AnalysisConfigError("group_by is a tuple of column names, e.g. ('profile',)")
        if (self.factor is None) != (self.baseline is None):
            raise AnalysisConfigError(
                "--factor and --baseline go together (e.g. --factor harness.error_style "
                "--baseline cavbench)"
            )


SYSTEM = "system"
"""Derived column naming what acted: the profile for the baseline engine, the adapter's name
for a custom adapter (`adapter/profile` for a custom adapter that takes a profile)."""


def default_group_by(episodes: pl.DataFrame) -> tuple[str, ...]:
    """`profile` for the baseline profiles; `adapter` when only the adapters differ (custom
    adapters' cells carry profile `none`); the derived `system` column when both vary (the
    baseline profiles beside custom adapters), so each is one level of one contrast.

    >>> default_group_by(pl.DataFrame({"adapter": ["baseline", "mine"], "profile": ["direct", "none"]}))
    ('system',)
    """
    varying = [
        c for c in ("adapter", "profile") if c in episodes.schema and episodes[c].n_unique() > 1
    ]
    if varying == ["adapter"]:
        return ("adapter",)
    if varying == ["adapter", "profile"] and SYSTEM not in episodes.schema:
        return (SYSTEM,)
    if varying == ["adapter", "profile"]:
        return ("adapter", "profile")
    return ("profile",)


def with_system(episodes: pl.DataFrame) -> pl.DataFrame:
    """`episodes` with the derived `system` column (see `SYSTEM`)."""
    adapter, profile = pl.col("adapter"), pl.col("profile")
    return episodes.with_columns(
        pl.when(adapter == "baseline")
        .then(profile)
        .when(profile == "none")
        .then(adapter)
        .otherwise(pl.concat_str([adapter, profile], separator="/"))
        .alias(SYSTEM)
    )


@dataclass(frozen=True, eq=False)
class AnalysisBundle:
    """Every table, report and figure of one analysis, before anything is written."""

    options: AnalyzeOptions
    metrics: MetricsResult
    family_metrics: pl.DataFrame | None
    contrasts: ContrastsResult | None
    pass_k: pl.DataFrame
    failure_codes: pl.DataFrame
    dimensions: pl.DataFrame | None
    headline: ReportTable
    contrasts_report: ReportTable | None
    plots: tuple[Plot, ...] = field(default=())
    factor_effects: FactorEffects | None = None
    factor_report: ReportTable | None = None
    usage: pl.DataFrame | None = None
    """Episodes, infra errors, turns, tokens and cost per group (infra errors included)."""
    warnings: tuple[str, ...] = ()
    """Caveats the analysis raised as :class:`analysis.AnalysisWarning` (e.g. unequal
    repetitions behind pass^k); the CLI prints them."""

    def frames(self) -> dict[str, pl.DataFrame]:
        """The numeric result tables by output name."""
        out = {
            "metrics": self.metrics.frame,
            "pass_k": self.pass_k,
            "failure_codes": self.failure_codes,
        }
        if self.family_metrics is not None:
            out["metrics_by_family"] = self.family_metrics
        if self.contrasts is not None:
            out["contrasts"] = self.contrasts.frame
        if self.dimensions is not None:
            out["dimensions"] = self.dimensions
        if self.factor_effects is not None:
            out["factor_effects"] = self.factor_effects.frame
            if self.factor_effects.by_pack is not None:
                out["factor_effects_by_pack"] = self.factor_effects.by_pack
        if self.usage is not None:
            out["usage"] = self.usage
        return out

    def reports(self) -> dict[str, ReportTable]:
        """The report tables by output name."""
        out = {"headline": self.headline}
        if self.contrasts_report is not None:
            out["contrasts"] = self.contrasts_report
        if self.factor_report is not None:
            out["factor_effects"] = self.factor_report
        return out


def apply_filters(episodes: pl.DataFrame, where: Sequence[tuple[str, str]]) -> pl.DataFrame:
    """Keep the episodes whose columns equal the given values (compared as text)."""
    for column, value in where:
        if column not in episodes.schema:
            raise AnalysisConfigError(
                f"--where {column}={value}: no column {column!r} in episodes "
                f"(columns: {', '.join(episodes.columns)})"
            )
        episodes = episodes.filter(pl.col(column).cast(pl.String) == value)
    if episodes.is_empty():
        raise AnalysisConfigError(f"no episode matches the filters {list(where)}")
    return episodes


def _contrast_factor(group_by: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    factor = "profile" if "profile" in group_by else group_by[0]
    return factor, tuple(c for c in group_by if c != factor)


def compute_analysis(
    episodes: pl.DataFrame,
    verdicts: pl.DataFrame | None,
    options: AnalyzeOptions = AnalyzeOptions(),
    *,
    factor_columns: Sequence[str] = (),
    caption: str = "Headline metrics per profile.",
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> AnalysisBundle:
    """Run every analysis over the tables (no file is read or written). ``on_stage`` is told
    the name of each stage as it starts (progress)."""
    episodes = apply_filters(episodes, options.where)
    group_by = options.group_by or default_group_by(episodes)
    if SYSTEM in group_by and SYSTEM not in episodes.schema:
        episodes = with_system(episodes)
    if options.factor is not None:
        # The factor's levels must never be pooled into one rate: group by them too.
        column = factor_column(episodes, options.factor)
        several_packs = "pack_id" in episodes.schema and episodes["pack_id"].n_unique() > 1
        extra = [column] + (["pack_id"] if several_packs else [])
        group_by = (*group_by, *(c for c in extra if c not in group_by))
    usage = usage_summary(episodes, group_by)
    # Factor effects pair episodes and count infra errors themselves: they get all of them.
    all_episodes = episodes
    episodes = rated_episodes(episodes)  # infra errors say nothing about the agent
    if episodes.is_empty():
        raise AnalysisConfigError("every selected episode is an infra_error; nothing to rate")
    check_single_valued(episodes, [*UNPOOLABLE_COLUMNS, *factor_columns], group_by)
    config = options.bootstrap
    on_stage("headline intervals")
    metrics = headline_metrics(episodes, group_by, config, small_n=options.small_n)
    family_metrics: pl.DataFrame | None = None
    if "family" not in group_by and "family" in episodes.schema:
        on_stage("per-family intervals")
        by_family = BootstrapConfig(
            n_resamples=config.n_resamples,
            seed=config.seed,
            level=config.level,
            method=config.method,
            stratify_by="family",
        )
        family_metrics = headline_metrics(
            episodes, (*group_by, "family"), by_family, small_n=options.small_n
        ).frame
    factor, within = _contrast_factor(group_by)
    contrasts: ContrastsResult | None = None
    if len(ordered_levels(episodes, factor)) >= 2:
        on_stage("paired contrasts")
        contrasts = paired_contrasts(
            episodes,
            factor=factor,
            metrics=options.contrast_metrics,
            reference=options.reference,
            within=within,
            config=config,
            permutation_resamples=options.permutation_resamples,
        )
    on_stage("pass^k and breakdowns")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnalysisWarning)
        pass_k = pass_hat_k(episodes, group_by, flag=options.pass_k_flag, config=config)
    notes = []
    for warning in caught:  # analysis caveats go to the bundle; anything else is re-issued
        if issubclass(warning.category, AnalysisWarning):
            notes.append(str(warning.message))
        else:
            warnings.warn(warning.message, warning.category, stacklevel=2)
    failure_codes = failure_code_breakdown(episodes, group_by)
    dimensions = None
    if verdicts is not None:
        ids = episodes.select("episode_id")
        dimensions = dimension_breakdown(
            verdicts.join(ids, on="episode_id", how="semi"), group_by, episodes=episodes
        )
    headline = headline_table(
        metrics.frame, config, groups=group_by, small_n=options.small_n, caption=caption
    )
    contrasts_report = (
        None if contrasts is None else contrasts_table(contrasts.frame, contrasts.note, config)
    )
    on_stage("figures")
    plots = [
        validity_gap_figure(metrics.frame, group_by),
        osr_cvsr_dumbbell(metrics.frame, group_by),
    ]
    if family_metrics is not None and len(group_by) == 1:
        plots.append(family_small_multiples(family_metrics, group=group_by[0]))
        plots.append(family_heatmap(family_metrics, group=group_by[0]))
    if contrasts is not None and not within:
        plots.append(paired_difference_figure(contrasts.frame))
    if dimensions is not None and len(group_by) == 1 and not dimensions.is_empty():
        plots.append(dimension_heatmap(dimensions, group=group_by[0]))
    if pass_k.filter(pl.col("k") > 1).height:  # pass^k says something only with repeats
        plots.append(pass_k_figure(pass_k, group_by))
    effects: FactorEffects | None = None
    if options.factor is not None and options.baseline is not None:
        effects = factor_effects(
            all_episodes,
            options.factor,
            options.baseline,
            held_fixed=factor_columns,
            config=config,
            permutation_resamples=options.permutation_resamples,
            exploratory=not options.confirmatory,
        )
        plots.append(factor_forest_figure(effects))
    return AnalysisBundle(
        options=options,
        metrics=metrics,
        family_metrics=family_metrics,
        contrasts=contrasts,
        pass_k=pass_k,
        failure_codes=failure_codes,
        dimensions=dimensions,
        headline=headline,
        contrasts_report=contrasts_report,
        plots=tuple(plots),
        factor_effects=effects,
        factor_report=None if effects is None else factor_effects_table(effects),
        usage=usage,
        warnings=tuple(notes),
    )


class FileRecord(BaseModel):
    """A file read or written, relative to the manifest's base, with its SHA-256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """Path relative to the input (for inputs) or output (for outputs) directory."""
    sha256: str
    """Hex SHA-256 of the file's bytes."""


class AnalysisParameters(BaseModel):
    """Every parameter that changes the numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_by: tuple[str, ...]
    where: tuple[tuple[str, str], ...]
    seed: int
    """Seed of the task resampling (and of the permutation tests)."""
    n_resamples: int
    level: float
    method: str
    """Bootstrap interval: ``bca`` or ``percentile``."""
    stratify_by: str | None
    small_n: str
    """Closed-form interval beside the bootstrap for single rates."""
    reference: str | None
    contrast_metrics: tuple[str, ...]
    permutation_resamples: int
    pass_k_flag: str
    factor: str | None = None
    """The swept key of the factor-effect analysis (``--factor``), if any."""
    baseline: str | None = None
    confirmatory: bool = False
    family_breakdown_stratified_by: str = "family"
    """Per-family metrics resample scenarios within their family."""

    @model_serializer(mode="wrap")
    def _omit_absent_factor(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Without --factor the manifest stays as it was (frozen paper manifests compare equal).
        data: dict[str, object] = handler(self)
        if self.factor is None:
            for key in ("factor", "baseline", "confirmatory"):
                data.pop(key, None)
        return data

    @classmethod
    def of(cls, options: AnalyzeOptions) -> AnalysisParameters:
        """The parameters of an options record."""
        b = options.bootstrap
        return cls(
            group_by=options.group_by,
            where=options.where,
            seed=b.seed,
            n_resamples=b.n_resamples,
            level=b.level,
            method=str(b.method),
            stratify_by=b.stratify_by,
            small_n=str(options.small_n),
            reference=options.reference,
            contrast_metrics=tuple(str(m) for m in options.contrast_metrics),
            permutation_resamples=options.permutation_resamples,
            pass_k_flag=str(options.pass_k_flag),
            factor=options.factor,
            baseline=options.baseline,
            confirmatory=options.confirmatory,
        )


class AnalysisManifest(BaseModel):
    """What an analysis read, how it computed, with which libraries, and what it wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["cavbench.analysis"] = "cavbench.analysis"
    schema_version: str = "1"
    layout: str
    """How the inputs were laid out: ``collected``, ``jobs`` or ``single``."""
    inputs: tuple[FileRecord, ...]
    skipped_cells: tuple[str, ...] = ()
    """Cells left out because they were unfinished or damaged (``--allow-incomplete``)."""
    factor_columns: tuple[str, ...] = ()
    parameters: AnalysisParameters
    library_versions: dict[str, str]
    """Python and the libraries that shape the numbers and figures."""
    provenance: dict[str, str | None] = {}
    """cavbench version and git commit of the code that ran the analysis (analyze only)."""
    outputs: tuple[FileRecord, ...] = ()


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries behind the numbers and the figures."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def manifest_json(manifest: AnalysisManifest) -> str:
    """The manifest as stable JSON text (indent 2, sorted keys, trailing newline)."""
    return json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def _write_frame(frame: pl.DataFrame, path: Path) -> None:
    if path.suffix == ".csv":
        round_numbers(frame).write_csv(path)
    else:
        frame.write_parquet(path, statistics=False)


def write_bundle(
    bundle: AnalysisBundle, directory: Path, *, table_format: Literal["parquet", "csv"]
) -> list[Path]:
    """Write the bundle's tables, reports and figures into ``directory`` (which must exist)."""
    written: list[Path] = []
    for name, frame in bundle.frames().items():
        path = directory / f"{name}.{table_format}"
        _write_frame(frame, path)
        written.append(path)
    for name, table in bundle.reports().items():
        for suffix, text in (
            (".md", to_markdown(table)),
            (".tex", to_latex(table)),
            (".html", to_html(table)),
        ):
            path = directory / f"{name}{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    for plot in bundle.plots:
        written += write_plot(plot, directory / FIGURES, bundle.options.formats)
    return written


def file_records(paths: Sequence[Path], base: Path) -> tuple[FileRecord, ...]:
    """Checksummed records of files, relative to ``base``, sorted by path."""
    return tuple(
        sorted(
            (FileRecord(path=p.relative_to(base).as_posix(), sha256=sha256_file(p)) for p in paths),
            key=lambda r: r.path,
        )
    )


def check_replaceable(target: Path, *, owner_file: str) -> None:
    """Refuse an output directory that exists and is not empty or a previous output.

    (So a typo in ``--out`` cannot delete unrelated files.) Called before any work is done.
    """
    if not target.exists():
        return
    if not target.is_dir():
        raise AnalysisConfigError(f"{target}: exists and is not a directory (fix: pick --out)")
    if any(target.iterdir()) and not (target / owner_file).is_file():
        raise AnalysisConfigError(
            f"{target}: not empty and not a previous output (no {owner_file}); refusing to "
            "replace it (fix: choose an empty or new --out directory)"
        )


def replace_directory(target: Path, build: Path, *, owner_file: str) -> None:
    """Move a fully built directory into place, replacing a previous output of the same kind."""
    check_replaceable(target, owner_file=owner_file)
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
        build.rename(target)
        shutil.rmtree(old)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        build.rename(target)


def _staging(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))


@dataclass(frozen=True, eq=False)
class AnalyzeResult:
    """What `analyze` produced."""

    bundle: AnalysisBundle
    manifest: AnalysisManifest
    out: Path
    tables: SweepTables


def run_analyze(
    sweep_dir: Path,
    out: Path,
    options: AnalyzeOptions = AnalyzeOptions(),
    *,
    verify: bool = True,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> AnalyzeResult:
    """Verify a sweep like `collect` does, read it, analyse it and write every output into
    ``out`` atomically.

    Unfinished or damaged cells, tables without a manifest and a stale ``collected/`` raise
    `SweepError` naming the command to run (``options.allow_incomplete`` leaves such cells
    out instead). ``verify=False`` reads tables that carry no cavbench manifest at all
    (synthetic tables in tests); the CLI always verifies.
    """
    sweep_dir, out = Path(sweep_dir), Path(out)
    check_replaceable(out, owner_file=ANALYSIS_MANIFEST)
    left_out: tuple[str, ...] = ()
    if verify:
        on_stage("verify checksums")
        verified = verify_sweep(sweep_dir, allow_incomplete=options.allow_incomplete)
        left_out = tuple(cell for cell, _ in verified.left_out)
        cells = verified.cells if verified.layout is SweepLayout.CELLS else None
        on_stage("read tables")
        tables = read_sweep(verified.read_from if cells is None else sweep_dir, cells=cells)
    else:
        on_stage("read tables")
        tables = read_sweep(sweep_dir, skip_incomplete=options.allow_incomplete)
        left_out = tables.skipped_cells
    if not options.group_by:
        chosen = default_group_by(apply_filters(tables.episodes, options.where))
        options = dataclasses.replace(options, group_by=chosen)
        on_stage(f"grouping by {','.join(chosen)}")
    bundle = compute_analysis(
        tables.episodes,
        tables.verdicts,
        options,
        factor_columns=tables.factor_columns,
        on_stage=on_stage,
    )
    on_stage("write outputs")
    staging = _staging(out)
    try:
        written = write_bundle(bundle, staging, table_format="parquet")
        facts = environment_facts()
        manifest = AnalysisManifest(
            layout=str(tables.layout),
            inputs=file_records([s.path for s in tables.sources], sweep_dir),
            skipped_cells=left_out,
            factor_columns=tables.factor_columns,
            parameters=AnalysisParameters.of(options),
            library_versions=library_versions(),
            provenance={k: facts[k] for k in ("cavbench_version", "git_commit", "git_dirty")},
            outputs=file_records(written, staging),
        )
        (staging / ANALYSIS_MANIFEST).write_text(manifest_json(manifest), encoding="utf-8")
        replace_directory(out, staging, owner_file=ANALYSIS_MANIFEST)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return AnalyzeResult(bundle=bundle, manifest=manifest, out=out, tables=tables)


__all__ = [
    "ANALYSIS_MANIFEST",
    "AnalysisBundle",
    "AnalysisManifest",
    "AnalysisParameters",
    "AnalyzeOptions",
    "AnalyzeResult",
    "FileRecord",
    "apply_filters",
    "check_replaceable",
    "compute_analysis",
    "default_group_by",
    "with_system",
    "file_records",
    "library_versions",
    "manifest_json",
    "replace_directory",
    "run_analyze",
    "write_bundle",
]
