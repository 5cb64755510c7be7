"""`adapter=external`: candidate processes per episode, their failures recorded, in sweeps."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cavbench.adapters import baseline
from cavbench.gateway import GatewayError
from cavbench.gateway.external import CANDIDATE_PROCESS_KEY, ExternalAdapter, Transport
from cavbench.runner import run_episode, run_episodes
from cavbench.scenarios import load_pack

ROOT = Path(__file__).parents[2]
MOCK = load_pack("mock")
CANDIDATE = Path(__file__).parent / "candidates" / "baseline_candidate.py"
PY = sys.executable


def _episode(command: str, limit: float = 20.0) -> tuple[str | None, dict[str, Any]]:
    trace = run_episode(MOCK.scenarios[0], ExternalAdapter(command, time_limit_s=limit))
    process = trace.adapter_report.metadata[CANDIDATE_PROCESS_KEY]
    assert isinstance(process, dict)
    return trace.error, process


def test_a_crashing_candidate_is_an_episode_error_with_exit_code_and_stderr() -> None:
    error, fields = _episode(
        f"{PY} -c \"import sys; sys.stderr.write('boom at start'); sys.exit(3)\""
    )
    assert error is not None
    assert "exited with code 3" in error
    assert (fields["exit_code"], fields["stderr_tail"]) == (3, "boom at start")
    assert fields["timed_out"] is False


def test_a_hung_candidate_is_killed_at_its_wall_clock_limit() -> None:
    error, fields = _episode(f'{PY} -c "import time; time.sleep(60)"', limit=0.5)
    assert error is not None
    assert "wall-clock limit of 0.5s" in error
    assert fields["timed_out"] is True
    assert fields["exit_code"] is not None


def test_a_missing_command_is_an_episode_error() -> None:
    error, fields = _episode("/nonexistent/candidate --flag")
    assert error is not None
    assert "cannot start candidate" in error
    assert fields["exit_code"] is None


@pytest.mark.parametrize("bad", [{"command": "  "}, {"command": "x", "time_limit_s": 0}])
def test_bad_adapter_settings_name_the_fix(bad: dict[str, object]) -> None:
    with pytest.raises(GatewayError, match="fix"):
        ExternalAdapter(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="carrier-pigeon"):
        ExternalAdapter("x", transport="carrier-pigeon")  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["direct", "full_lifecycle"])
def test_a_candidate_process_gives_in_process_verdicts(profile: str) -> None:
    local = run_episodes(MOCK, baseline(profile))
    remote = run_episodes(MOCK, ExternalAdapter(f"{PY} {CANDIDATE} {profile}", Transport.REST))
    assert sum(a.verdict == b.verdict for a, b in zip(local, remote, strict=True)) == len(
        MOCK.scenarios
    )
    assert all(b.trace.error is None for b in remote)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_the_node_candidate_runs_in_a_sweep_and_resumes(tmp_path: Path, launcher: str) -> None:
    command = [
        PY,
        "-m",
        "cavbench.sweep",
        "-m",
        "adapter=external",
        f"adapter.command=node {ROOT / 'examples' / 'candidates' / 'node' / 'agent.js'}",
        "scenarios=mock",
        "+factors.trial=a,b",
        f"output.root={tmp_path}",
        "output.progress=false",
    ]
    if launcher == "joblib":
        command += ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    for _ in range(2):  # the second run finds complete cells and skips them
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
    assert "skipped" in done.stdout + done.stderr
    episodes = pl.read_parquet(sorted(tmp_path.glob("**/episodes*.parquet")))
    assert episodes.height == 10
    processes = [json.loads(m)[CANDIDATE_PROCESS_KEY] for m in episodes["report_metadata"]]
    assert [p["exit_code"] for p in processes] == [0] * 10
    assert episodes["error"].null_count() == 10
    assert episodes["commit_valid_success"].sum() == 6
