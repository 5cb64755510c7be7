"""Helpers for sweep tests: compose the real config tree, shrunk to the mock pack."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from omegaconf import DictConfig

from cavbench.study import compose

REPO = Path(__file__).resolve().parents[2]
MOCK = ["scenarios=mock", "output.progress=false"]
CRASHING = [
    "adapter.name=crashing",
    "adapter.factory._target_=tests.sweep.adapters.crashing",
    "+adapter.factory.crash_on=[MK-02]",
]
RUNAWAY = [
    "adapter.name=runaway",
    "adapter.factory._target_=tests.sweep.adapters.runaway",
    "+adapter.factory.sleep_on=[MK-02]",
    "+adapter.factory.exit_on=[MK-03]",
    "limits.episode_seconds=0.5",
]


@pytest.fixture
def config(tmp_path: Path) -> Callable[..., DictConfig]:
    """`config(*overrides)`: the composed job config, writing under `tmp_path/sweeps`."""

    def make(*overrides: str) -> DictConfig:
        return compose([*MOCK, f"output.root={tmp_path / 'sweeps'}", *overrides])

    return make


def run_sweep(
    args: Sequence[str], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m cavbench.sweep ARGS` in `cwd`, the repo importable (for tests.sweep.adapters)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), full_env.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, "-m", "cavbench.sweep", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
