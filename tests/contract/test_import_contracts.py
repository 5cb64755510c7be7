"""The architecture's boundaries are checks, not prose: import-linter's contracts hold."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest


@pytest.mark.slow
def test_lint_imports_passes(shared_paths: dict[str, Path]) -> None:
    root = shared_paths["repo_root"]
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [exe, "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_contracts_cover_the_trust_boundary(shared_paths: dict[str, Path]) -> None:
    """The contracts that make the adversarial tests meaningful are declared."""
    config = tomllib.loads(
        (shared_paths["repo_root"] / "pyproject.toml").read_text(encoding="utf-8")
    )
    contracts = config["tool"]["importlinter"]["contracts"]
    forbidden = {
        c["source_modules"][0]: set(c["forbidden_modules"])
        for c in contracts
        if c["type"] == "forbidden"
    }
    assert {
        "cavbench.runtime._environment",
        "cavbench.runtime._ledger",
        "cavbench.evaluation",
    } <= forbidden["cavbench.adapters"]
    assert {"cavbench.adapters", "cavbench.runtime"} <= forbidden["cavbench.evaluation"]
    assert {"cavbench.runtime", "cavbench.agents", "cavbench.trace"} <= forbidden["cavbench.models"]
    assert {"cavbench.runtime._environment", "cavbench.evaluation"} <= forbidden["cavbench.agents"]
