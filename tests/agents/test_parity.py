"""Parity golden test: a scripted model replaying, as tool calls, exactly the actions each
baseline profile takes gets that profile's verdicts — so the tool layer adds no bias."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cavbench.adapters import BASELINE_PROFILES, Profile
from cavbench.agents import Budgets, LLMAdapter
from cavbench.controls import profile_scripts
from cavbench.evaluation import evaluate
from cavbench.models import ScriptedModel, turns_script
from cavbench.runner import Episode, run_episode, verdict_row
from cavbench.scenarios import ScenarioPack, load_pack, load_pack_dir

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "core-v1.expected.csv"
DEV_PACK = ROOT.parent / "shared" / "cavbench-v1" / "dev-pack"


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(newline="") as handle:
        return {(r["scenario_id"], r["profile"]): r for r in csv.DictReader(handle)}


def _normalise(row: dict[str, object]) -> dict[str, str]:
    out = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in row.items()}
    out["failure_codes"] = ";".join(sorted(c for c in out["failure_codes"].split(";") if c))
    return out


def _parity(
    pack: ScenarioPack,
    expected: dict[tuple[str, str], dict[str, str]],
    profiles: tuple[Profile, ...] = BASELINE_PROFILES,
) -> int:
    """How many (scenario, profile) rows the scripted LLM adapter reproduces exactly."""
    matched = 0
    scenarios = list(pack.scenarios)
    for profile in profiles:
        scripts = profile_scripts(scenarios, profile.value)
        adapter = LLMAdapter(
            model=ScriptedModel(turns_script([], scripts)),
            budgets=Budgets(max_turns=100, max_tokens=None, wall_clock_s=None),
        )
        for scenario in scenarios:
            trace = run_episode(scenario, adapter)
            episode = Episode(scenario, "llm", 0, trace, evaluate(scenario, trace))
            got = _normalise(verdict_row(episode, profile.value))
            want = {k: v for k, v in expected[(scenario.id, profile.value)].items() if k in got}
            assert trace.agent is not None
            assert trace.agent.stop_reason.value == "report_outcome", scenario.id
            matched += got == _normalise(want)
    return matched


def test_scripted_profiles_reproduce_core_v1_verdicts() -> None:
    assert _parity(load_pack("core-v1"), _rows(GOLDEN)) == 200


def test_scripted_profiles_reproduce_dev_pack_verdicts() -> None:
    expected = DEV_PACK / "framework-v1.expected.csv"
    if not expected.is_file():
        pytest.skip(f"{expected} not present (reference material outside the repo)")
    assert _parity(load_pack_dir(DEV_PACK / "framework-v1"), _rows(expected)) == 20
