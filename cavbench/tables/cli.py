"""`cavbench collect` and `cavbench recompute`: the table subcommands of the CLI.

`cavbench.cli` calls `register(subparsers)`; the heavy imports wait until a command runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

EXIT_OK, EXIT_DIFFERENCES = 0, 1
_SHOWN = 20
_WIDTH = 160


def _clip(text: str) -> str:
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `collect` and `recompute` to the `cavbench` command line."""
    p = subparsers.add_parser(
        "collect",
        help="merge a finished sweep into one Parquet file per table",
        description=(
            "Merge every complete cell of SWEEP_DIR into SWEEP_DIR/collected/<table>.parquet "
            "(partition keys as real columns) plus a sweep manifest.json. Cells that are not "
            "complete, or whose files fail their checksums, stop the merge."
        ),
    )
    p.add_argument("sweep_dir", type=Path, metavar="SWEEP_DIR")
    p.add_argument(
        "--out", type=Path, default=None, help="output folder (default SWEEP_DIR/collected)"
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="leave unfinished or damaged cells out (listed) instead of stopping",
    )
    p.set_defaults(func=cmd_collect)

    p = subparsers.add_parser(
        "recompute",
        help="re-score a sweep from its recorded tables and report verdicts that differ",
        description=(
            "Rebuild every episode's trace from the events, ledger and states tables of "
            "SWEEP_DIR (its cells, or its collected/ folder), score it again without running "
            "any adapter, and report every recorded value that differs. Exit 0 when nothing "
            "differs, 1 when something does."
        ),
    )
    p.add_argument("sweep_dir", type=Path, metavar="SWEEP_DIR")
    p.add_argument(
        "--rule",
        default=None,
        choices=["v1", "v1_strict"],
        help="re-score under this rule instead of each cell's recorded one",
    )
    p.add_argument(
        "--pack",
        default=None,
        help="pack to score against (default: the copy stored in the sweep, else the recorded one)",
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="leave out (and list) unfinished or damaged cells instead of stopping",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_recompute)


def cmd_collect(args: argparse.Namespace) -> int:
    from cavbench.tables._collect import collect

    result = collect(args.sweep_dir, args.out, allow_incomplete=args.allow_incomplete)
    manifest = result.manifest
    print(
        f"collected {manifest.n_cells} cells, {manifest.n_episodes} episodes "
        f"({manifest.n_errors} adapter errors) into {result.out_dir}"
    )
    for name, record in manifest.tables.items():
        print(f"  {name:<9} {record.rows:>9} rows  {record.sha256}")
    for cell, problems in result.left_out:
        print(f"  left out {cell}: {'; '.join(problems)}")
    return EXIT_OK


def cmd_recompute(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from cavbench.tables._recompute import recompute

    report = recompute(
        args.sweep_dir, rule=args.rule, allow_incomplete=args.allow_incomplete, pack=args.pack
    )
    if args.json:
        print(
            json.dumps(
                {
                    "n_cells": report.n_cells,
                    "n_episodes": report.n_episodes,
                    "rule": report.rule,
                    "n_differences": len(report.differences),
                    "n_differing_episodes": report.n_differing_episodes,
                    "differences": [asdict(d) for d in report.differences],
                    "rate_changes": [asdict(r) for r in report.rate_changes],
                },
                indent=2,
                sort_keys=True,
            )
        )
        return EXIT_OK if report.ok else EXIT_DIFFERENCES
    under = f"rule {report.rule}" if report.rule else "the recorded rules"
    print(
        f"recomputed {report.n_episodes} episodes in {report.n_cells} cells under {under}: "
        f"{len(report.differences)} differences in {report.n_differing_episodes} episodes"
    )
    for change in report.rate_changes:
        print(f"  {change.line()}")
    for d in report.differences[:_SHOWN]:
        print(
            f"  {d.episode_id} {d.field}: recorded {_clip(d.recorded)} "
            f"-> recomputed {_clip(d.recomputed)}"
        )
    if len(report.differences) > _SHOWN:
        print(f"  … and {len(report.differences) - _SHOWN} more (use --json for all)")
    return EXIT_OK if report.ok else EXIT_DIFFERENCES
