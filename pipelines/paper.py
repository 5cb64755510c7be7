"""Regenerate every figure and table of the paper from frozen artifacts, offline.

``python -m pipelines.paper`` (or ``cavbench figures``) reads the canonical ablation's frozen
tables from ``artifacts/ablation/`` (``episodes.parquet``, ``verdicts.parquet``,
``manifest.json``), runs the same analysis as ``cavbench analyze`` with its default
parameters, and writes ``artifacts/paper/``: every figure as SVG, PDF and PNG with the CSV of
the numbers it draws, the result tables as CSV, ``headline.md`` / ``.tex`` / ``.html`` (and the
contrasts table), and ``manifest.json`` with the checksums of inputs and outputs. No adapter
runs and nothing touches the network. The default paths are relative to the working
directory: run it from the repository root (or pass ``--artifacts`` and ``--out``).

The frozen tables are verified first, every table against the row count and content
checksum its ``manifest.json`` records (``cavbench.tables.verify_sweep``), so a truncated,
deleted or edited input fails before anything is computed.

Every frozen factor study beside the ablation (a folder holding a ``study.json``, such as
``artifacts/harness-control/``) is regenerated into ``artifacts/paper/<folder>/`` as well; see
:mod:`pipelines.factor_study`.

``--check`` regenerates into a temporary directory and compares with the committed
``artifacts/paper/``: every text file (CSV, Markdown, LaTeX, HTML, SVG, JSON; of the manifest, its
inputs, parameters and layout) must match exactly, so an edited number or figure label fails; a raster image
(PNG) whose bytes differ may match within a pixel tolerance (a different matplotlib or
FreeType build can move an antialiased edge without changing a number), and a PDF whose
bytes differ passes only when its figure's SVG is identical and its PNG within tolerance.
``--strict`` requires every file byte for byte. Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import polars as pl

from analysis import read_sweep, sha256_file
from analysis._errors import AnalysisConfigError
from cavbench.errors import CavBenchError
from cavbench.tables import verify_sweep
from pipelines.analyze import (
    AnalysisManifest,
    AnalysisParameters,
    AnalyzeOptions,
    check_replaceable,
    compute_analysis,
    file_records,
    library_versions,
    manifest_json,
    replace_directory,
    write_bundle,
)
from pipelines.factor_study import find_studies, regenerate_study

DEFAULT_ARTIFACTS = Path("artifacts/ablation")
DEFAULT_OUT = Path("artifacts/paper")
PAPER_MANIFEST = "manifest.json"
PNG_TOLERANCE = 2.0
"""RMS pixel difference (0-255 scale, as `matplotlib.testing.compare`) a PNG may show."""
EXACT_SUFFIXES = frozenset({".csv", ".md", ".tex", ".html", ".svg", ".json"})
"""Text formats: compared byte for byte, never with a tolerance."""
RASTER_SUFFIXES = frozenset({".png", ".pdf"})
"""Binary figure formats whose bytes may differ across builds (see `compare_outputs`)."""
PAPER_OPTIONS = AnalyzeOptions()
"""The paper uses `cavbench analyze`'s defaults, so either command gives the same numbers."""


def _caption(episodes: pl.DataFrame) -> str:
    packs = sorted(str(p) for p in episodes.get_column("pack_id").unique().to_list())
    where = f" on {', '.join(packs)}" if packs else ""
    return (
        f"Controlled architecture ablation{where}: headline metrics per baseline profile "
        "(deterministic baselines, not model performance)."
    )


def regenerate(artifacts: Path, out: Path, *, verify: bool = True) -> AnalysisManifest:
    """Recompute every paper figure and table from ``artifacts`` into ``out`` (replaced).

    The inputs are verified against their manifest's checksums first (``verify=False`` only
    for synthetic tables that carry no cavbench manifest, in tests)."""
    artifacts, out = Path(artifacts), Path(out)
    check_replaceable(out, owner_file=PAPER_MANIFEST)
    if verify:
        verified = verify_sweep(artifacts)
        tables = read_sweep(verified.read_from, cells=verified.cells or None)
    else:
        tables = read_sweep(artifacts)
    bundle = compute_analysis(
        tables.episodes,
        tables.verdicts,
        PAPER_OPTIONS,
        factor_columns=tables.factor_columns,
        caption=_caption(tables.episodes),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        written = write_bundle(bundle, staging, table_format="csv")
        # Frozen factor studies beside the ablation, each into its own sub-folder.
        for study in find_studies(artifacts.parent):
            regenerate_study(study, staging / study.name, verify=verify)
        inputs = [s.path for s in tables.sources]
        if (artifacts / "manifest.json").is_file():
            inputs.append(artifacts / "manifest.json")
        manifest = AnalysisManifest(
            layout=str(tables.layout),
            inputs=file_records(inputs, artifacts),
            factor_columns=tables.factor_columns,
            parameters=AnalysisParameters.of(PAPER_OPTIONS),
            library_versions=library_versions(),
            outputs=file_records(written, staging),
        )
        (staging / PAPER_MANIFEST).write_text(manifest_json(manifest), encoding="utf-8")
        replace_directory(out, staging, owner_file=PAPER_MANIFEST)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


class Verdict(StrEnum):
    """Outcome of comparing one committed file with its regenerated twin."""

    IDENTICAL = "identical"
    WITHIN_TOLERANCE = "within tolerance"
    DIFFERENT = "different"
    MISSING = "missing from the committed output"
    EXTRA = "not regenerated"


@dataclass(frozen=True)
class FileComparison:
    """One file's comparison."""

    path: str
    verdict: Verdict
    detail: str = ""

    @property
    def ok(self) -> bool:
        """True when the file reproduces."""
        return self.verdict in (Verdict.IDENTICAL, Verdict.WITHIN_TOLERANCE)


@dataclass(frozen=True)
class CheckReport:
    """The comparison of a regeneration with the committed output."""

    files: tuple[FileComparison, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every file reproduces."""
        return all(f.ok for f in self.files)


def _files(root: Path) -> dict[str, Path]:
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and "-failed-diff" not in p.name
    }


def _compare_manifests(
    committed: Path, fresh: Path, rel: str = PAPER_MANIFEST
) -> tuple[FileComparison, list[str]]:
    old = json.loads(committed.read_text(encoding="utf-8"))
    new = json.loads(fresh.read_text(encoding="utf-8"))
    notes = []
    if old.get("library_versions") != new.get("library_versions"):
        notes.append(
            f"library versions differ: committed {old.get('library_versions')}, "
            f"here {new.get('library_versions')}"
        )
    differing = [k for k in ("inputs", "parameters", "layout") if old.get(k) != new.get(k)]
    if differing:
        return FileComparison(rel, Verdict.DIFFERENT, f"manifest fields differ: {differing}"), notes
    return FileComparison(rel, Verdict.IDENTICAL), notes


def _png_close(committed: Path, fresh: Path, tolerance: float) -> tuple[bool, str]:
    from matplotlib.testing.compare import compare_images

    try:
        result = compare_images(str(committed), str(fresh), tol=tolerance, in_decorator=True)
    except Exception as error:  # image sizes differ, unreadable file
        return False, f"PNG comparison failed: {error}"
    if result is None:
        return True, f"PNG within RMS {tolerance}"
    return False, f"PNG RMS {result['rms']:.3f} > {tolerance}"


def compare_outputs(
    committed: Path, fresh: Path, *, tolerance: float = PNG_TOLERANCE, strict: bool = False
) -> CheckReport:
    """Compare a committed paper directory with a regenerated one, file by file."""
    old, new = _files(committed), _files(fresh)
    results: list[FileComparison] = []
    notes: list[str] = []
    figure_bytes: dict[str, list[str]] = {}
    for rel in sorted(set(old) | set(new)):
        if rel not in new:
            results.append(FileComparison(rel, Verdict.EXTRA))
            continue
        if rel not in old:
            results.append(FileComparison(rel, Verdict.MISSING))
            continue
        if Path(rel).name == PAPER_MANIFEST:
            comparison, manifest_notes = _compare_manifests(old[rel], new[rel], rel)
            results.append(comparison)
            notes += manifest_notes
            continue
        same = sha256_file(old[rel]) == sha256_file(new[rel])
        suffix = Path(rel).suffix
        if same:
            results.append(FileComparison(rel, Verdict.IDENTICAL))
        elif suffix in RASTER_SUFFIXES and not strict:
            figure_bytes.setdefault(str(Path(rel).with_suffix("")), []).append(rel)
        else:
            kind = "text differs" if suffix in EXACT_SUFFIXES else "bytes differ"
            results.append(FileComparison(rel, Verdict.DIFFERENT, kind))
    for stem, rels in figure_bytes.items():
        png, svg = f"{stem}.png", f"{stem}.svg"
        svg_differs = svg in old and svg in new and sha256_file(old[svg]) != sha256_file(new[svg])
        if svg_differs:
            close, detail = False, f"and {svg} differs"
        elif png in old and png in new:
            close, detail = _png_close(old[png], new[png], tolerance)
        else:
            close, detail = False, "no PNG to compare"
        for rel in rels:
            results.append(
                FileComparison(
                    rel,
                    Verdict.WITHIN_TOLERANCE if close else Verdict.DIFFERENT,
                    f"bytes differ; {detail}",
                )
            )
    return CheckReport(tuple(sorted(results, key=lambda r: r.path)), tuple(notes))


def check(
    artifacts: Path,
    committed: Path,
    *,
    tolerance: float = PNG_TOLERANCE,
    strict: bool = False,
    verify: bool = True,
) -> CheckReport:
    """Regenerate into a temporary directory and compare with the committed output."""
    committed = Path(committed)
    if not (committed / PAPER_MANIFEST).is_file():
        raise AnalysisConfigError(
            f"{committed}: no {PAPER_MANIFEST}; nothing committed to check against (fix: run "
            "`python -m pipelines.paper` and commit its output)"
        )
    with tempfile.TemporaryDirectory(prefix="cavbench-paper-check-") as tmp:
        fresh = Path(tmp) / "paper"
        regenerate(artifacts, fresh, verify=verify)
        return compare_outputs(committed, fresh, tolerance=tolerance, strict=strict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by ``python -m pipelines.paper`` and ``cavbench figures``."""
    parser.add_argument(
        "--artifacts",
        type=Path,
        default=DEFAULT_ARTIFACTS,
        help=f"frozen ablation tables (default: {DEFAULT_ARTIFACTS})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"where the paper's figures and tables go (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and compare with --out; exit 1 on a difference",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --check, require PNG and PDF figures to be byte-identical too (no tolerance)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=PNG_TOLERANCE,
        help=f"with --check, RMS pixel tolerance for PNGs whose bytes differ ({PNG_TOLERANCE})",
    )


def run(args: argparse.Namespace) -> int:
    """Regenerate, or check; print what happened; return the exit status."""
    try:
        if args.check:
            report = check(args.artifacts, args.out, tolerance=args.tolerance, strict=args.strict)
            for comparison in report.files:
                if comparison.verdict is not Verdict.IDENTICAL:
                    print(f"{comparison.verdict.upper()}: {comparison.path} {comparison.detail}")
            for note in report.notes:
                print(f"note: {note}")
            identical = sum(f.verdict is Verdict.IDENTICAL for f in report.files)
            print(
                f"{'OK' if report.ok else 'FAILED'}: {identical} of {len(report.files)} files "
                f"identical to {args.out}"
                + ("" if report.ok else "; regenerate with `python -m pipelines.paper`")
            )
            return 0 if report.ok else 1
        manifest = regenerate(args.artifacts, args.out)
    except CavBenchError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(manifest.outputs) + 1} files to {args.out} from {args.artifacts}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m pipelines.paper``."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.paper",
        description="Regenerate the paper's figures and tables from frozen artifacts (offline).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
