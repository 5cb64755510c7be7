"""A fresh sweep reproduces each frozen study's tables under artifacts/ exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("experiment", "folder"),
    [
        ("ablation", "ablation"),
        ("harness_control", "harness-control"),
        # A model-driven study: its messages and request digests must not depend on the
        # process (string hashing once reordered a rendered set).
        ("harness_text_sensitive", "harness-text-sensitive"),
    ],
)
def test_a_fresh_sweep_matches_the_frozen_table_checksums(
    tmp_path: Path, experiment: str, folder: str
) -> None:
    # From the repository root: a registered plan's path is relative to it.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cavbench.sweep",
            "-m",
            f"experiment={experiment}",
            f"output.root={tmp_path}",
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    out = tmp_path / "collected"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cavbench.cli",
            "collect",
            str(tmp_path / experiment),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    fresh = json.loads((out / "manifest.json").read_text())["tables"]
    frozen = json.loads((ROOT / "artifacts" / folder / "manifest.json").read_text())["tables"]
    assert {t: (v["rows"], v["sha256"]) for t, v in fresh.items()} == {
        t: (v["rows"], v["sha256"]) for t, v in frozen.items()
    }
