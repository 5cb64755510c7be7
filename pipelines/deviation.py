"""`cavbench deviation`: record a change to a pre-registered sweep's analysis plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cavbench.errors import CavBenchError


def cmd_deviation(args: argparse.Namespace) -> int:
    """Append an analysis-plan deviation with its reason; print the registration."""
    # Imported here: the study package loads Hydra, which other commands do not need.
    from cavbench.study import (
        DEVIATIONS_NAME,
        describe,
        read_preregistration,
        record_plan_deviation,
    )

    try:
        deviation = record_plan_deviation(args.sweep_dir, args.reason, args.plan)
        state = read_preregistration(args.sweep_dir)
    except CavBenchError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(f"recorded deviation #{deviation.seq} in {Path(args.sweep_dir) / DEVIATIONS_NAME}")
    if state is not None:
        print("\n".join(describe(state)))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `deviation` subcommand."""
    p = subparsers.add_parser(
        "deviation",
        help="record that a pre-registered sweep's analysis plan changed, and why",
        description=(
            "Hash the (edited) analysis plan of a pre-registered sweep and append the change, "
            "with its reason, to SWEEP_DIR/deviations.jsonl (append-only). Config changes are "
            'recorded by the sweep itself with prereg.deviation="REASON".'
        ),
    )
    p.add_argument("sweep_dir", type=Path, help="the sweep's output directory")
    p.add_argument("--reason", required=True, help="why the plan changed")
    p.add_argument(
        "--plan", type=Path, default=None, help="the plan file (default: the registered path)"
    )
    p.set_defaults(func=cmd_deviation)
