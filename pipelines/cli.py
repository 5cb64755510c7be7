"""`cavbench analyze` and `cavbench figures`: subcommands registered with the main CLI."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from analysis import (
    BootstrapConfig,
    FigureFormat,
    IntervalMethod,
    Metric,
    SmallNMethod,
    SuccessFlag,
)
from analysis import to_markdown as render_markdown
from cavbench.errors import CavBenchError, ConfigError
from pipelines import deviation, paper
from pipelines.analyze import AnalyzeOptions, run_analyze


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _where(text: str) -> tuple[str, str]:
    column, sep, value = text.partition("=")
    if not sep or not column:
        raise argparse.ArgumentTypeError(f"expected COLUMN=VALUE, got {text!r}")
    return column, value


def _metrics(text: str) -> tuple[Metric, ...]:
    try:
        return tuple(Metric(part.upper()) for part in _csv(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"metrics are a comma list of {', '.join(m.value for m in Metric)}; got {text!r}"
        ) from None


def _formats(text: str) -> tuple[FigureFormat, ...]:
    try:
        return tuple(FigureFormat(part.lower()) for part in _csv(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"formats are a comma list of {', '.join(f.value for f in FigureFormat)}; got {text!r}"
        ) from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _stage_printer(quiet: bool) -> Callable[[str], None]:
    """One stderr line per analysis stage, with the seconds since the start (progress)."""
    start = time.monotonic()

    def show(stage: str) -> None:
        if not quiet:
            print(
                f"analyze [{time.monotonic() - start:5.1f}s] {stage}", file=sys.stderr, flush=True
            )

    return show


def cmd_analyze(args: argparse.Namespace) -> int:
    """Analyse a sweep; print the headline table; write everything to --out."""
    # Imported here: the study package loads Hydra, which other commands do not need.
    from cavbench.study import describe, read_preregistration

    try:
        prereg = read_preregistration(args.sweep_dir) if args.sweep_dir.is_dir() else None
        if args.confirmatory and prereg is None:
            raise ConfigError(
                f"--confirmatory: {args.sweep_dir} was not pre-registered (no "
                "preregistration.json), so its analysis is exploratory (fix: drop --confirmatory)"
            )
        options = AnalyzeOptions(
            group_by=args.group_by,
            where=tuple(args.where or ()),
            bootstrap=BootstrapConfig(
                n_resamples=args.resamples,
                seed=args.seed,
                level=args.level,
                method=IntervalMethod(args.method),
                stratify_by=args.stratify_by,
            ),
            small_n=SmallNMethod(args.small_n),
            reference=args.reference,
            contrast_metrics=args.contrast_metrics,
            permutation_resamples=args.permutation_resamples,
            pass_k_flag=SuccessFlag(args.pass_k_flag),
            formats=args.figure_formats,
            allow_incomplete=args.allow_incomplete,
            factor=args.factor,
            baseline=args.baseline,
            confirmatory=args.confirmatory,
        )
        result = run_analyze(args.sweep_dir, args.out, options, on_stage=_stage_printer(args.quiet))
    except CavBenchError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(render_markdown(result.bundle.headline))
    if result.bundle.contrasts_report is not None:
        print(render_markdown(result.bundle.contrasts_report))
    if result.bundle.factor_report is not None:
        print(render_markdown(result.bundle.factor_report))
    usage = result.bundle.usage
    if usage is not None:
        # Cost and tokens of model-driven cells; infra errors are left out of every rate above.
        print("Model usage (infra_error episodes are excluded from the rates above):")
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True):
            print(usage)
    if prereg is not None:
        print("\n".join(describe(prereg)))
    for cell in result.manifest.skipped_cells:
        print(f"warning: left out incomplete or damaged cell {cell}", file=sys.stderr)
    for caveat in result.bundle.warnings:
        print(f"warning: {caveat}", file=sys.stderr)
    print(
        f"wrote {len(result.manifest.outputs) + 1} files to {result.out} "
        f"(manifest: {result.out / 'analysis_manifest.json'})"
    )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `analyze` and `figures` subcommands."""
    p = subparsers.add_parser(
        "analyze",
        help="metrics with task-clustered intervals, contrasts, pass^k, figures for a sweep",
        description=(
            "Verify a sweep like `cavbench collect` does (every cell COMPLETE, every table "
            "matching its manifest's checksum, collected/ not stale), read its episodes/verdicts "
            "tables (collected/ if present, else the cell folders) and write metrics (Parquet), report tables (Markdown, LaTeX), figures "
            "and an analysis manifest to --out. Prints the headline table."
        ),
    )
    p.add_argument("sweep_dir", type=Path, help="sweep output directory (or a folder of tables)")
    p.add_argument("--out", type=Path, required=True, help="output directory (replaced)")
    p.add_argument(
        "--group-by",
        type=_csv,
        default=(),
        help="comma list of columns (default: profile; adapter for custom adapters' cells, "
        "which carry profile=none; adapter,profile when both vary)",
    )
    p.add_argument(
        "--where",
        type=_where,
        action="append",
        metavar="COLUMN=VALUE",
        help="keep only episodes with this value (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0, help="resampling seed (0)")
    p.add_argument("--resamples", type=_positive, default=10_000, help="bootstrap resamples")
    p.add_argument("--level", type=float, default=0.95, help="interval level (0.95)")
    p.add_argument(
        "--method", choices=[m.value for m in IntervalMethod], default=IntervalMethod.BCA.value
    )
    p.add_argument(
        "--stratify-by", default=None, metavar="COLUMN", help="resample tasks within strata"
    )
    p.add_argument(
        "--small-n", choices=[m.value for m in SmallNMethod], default=SmallNMethod.WILSON.value
    )
    p.add_argument("--reference", default=None, help="level other levels are contrasted with")
    p.add_argument(
        "--contrast-metrics",
        type=_metrics,
        default=(Metric.CVSR, Metric.VG),
        help="comma list of metrics to contrast (CVSR,VG)",
    )
    p.add_argument("--permutation-resamples", type=_positive, default=9_999)
    p.add_argument(
        "--pass-k-flag",
        choices=[f.value for f in SuccessFlag],
        default=SuccessFlag.COMMIT_VALID.value,
    )
    p.add_argument(
        "--figure-formats",
        type=_formats,
        default=tuple(FigureFormat),
        metavar="svg,pdf,png",
        help="figure formats to write (all three by default)",
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="leave out (and list) cells that are unfinished or fail their checksums, and read "
        "the cell folders when collected/ is stale (default: refuse)",
    )
    p.add_argument(
        "--factor",
        default=None,
        metavar="KEY",
        help="a swept key (harness.error_style, model.temperature, adapter, profile, ...): "
        "paired effect of each level against --baseline",
    )
    p.add_argument("--baseline", default=None, metavar="LEVEL", help="the --factor's baseline")
    p.add_argument(
        "--confirmatory",
        action="store_true",
        help="this factor analysis is the pre-registered one (default: flagged exploratory)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines (for CI)")
    p.set_defaults(func=cmd_analyze)

    f = subparsers.add_parser(
        "figures",
        help="regenerate the paper's figures and tables from artifacts/ (offline)",
        description=(paper.__doc__ or "").split("\n\n")[0],
    )
    paper.add_arguments(f)
    f.set_defaults(func=paper.run)

    deviation.register(subparsers)
