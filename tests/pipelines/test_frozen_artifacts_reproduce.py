"""A fresh ablation sweep reproduces the frozen tables under artifacts/ablation exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "artifacts" / "ablation" / "manifest.json"

pytestmark = pytest.mark.slow


def test_fresh_ablation_sweep_matches_the_frozen_table_checksums(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cavbench.sweep",
            "-m",
            "experiment=ablation",
            f"output.root={tmp_path}",
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    out = tmp_path / "collected"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cavbench.cli",
            "collect",
            str(tmp_path / "ablation"),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    fresh = json.loads((out / "manifest.json").read_text())["tables"]
    frozen = json.loads(FROZEN.read_text())["tables"]
    assert {t: (v["rows"], v["sha256"]) for t, v in fresh.items()} == {
        t: (v["rows"], v["sha256"]) for t, v in frozen.items()
    }
