"""The LangGraph adapter gives the full-lifecycle verdicts on CAV-Bench's framework dev pack
(read from ../shared at test time; never copied into the repository)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from cavbench.adapters import baseline
from cavbench.gateway.langgraph_adapter import LangGraphAdapter, thread_id
from cavbench.runner import run_episodes, verdict_row
from cavbench.scenarios import load_pack

SHARED = Path(__file__).resolve().parents[3] / "shared" / "cavbench-v1" / "dev-pack"
DIMENSIONS = (
    "intent_grounding",
    "authority_validity",
    "temporal_state_validity",
    "execution_integrity",
    "outcome_recoverability",
)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.skipif(not (SHARED / "framework-v1").is_dir(), reason="CAV-Bench dev pack absent")
def test_full_lifecycle_verdicts_on_the_framework_dev_pack() -> None:
    pack = load_pack(str(SHARED / "framework-v1"))
    with (SHARED / "framework-v1.expected.csv").open(encoding="utf-8") as handle:
        expected = {
            r["scenario_id"]: r for r in csv.DictReader(handle) if r["profile"] == "full_lifecycle"
        }
    episodes = run_episodes(pack, LangGraphAdapter())
    rows = [verdict_row(e, "full_lifecycle") for e in episodes]
    same_dimensions = sum(
        _text(row[d]) == expected[str(row["scenario_id"])][d] for row in rows for d in DIMENSIONS
    )
    same_rows = sum(
        all(_text(v) == expected[str(row["scenario_id"])][k] for k, v in row.items())
        for row in rows
    )
    assert (same_dimensions, same_rows) == (20, 4)


def test_thread_ids_and_keys_are_stable_across_runs() -> None:
    pack = load_pack("mock")
    first = run_episodes(pack, LangGraphAdapter())
    again = run_episodes(pack, LangGraphAdapter())
    engine = run_episodes(pack, baseline("full_lifecycle"))
    for a, b, c in zip(first, again, engine, strict=True):
        assert a.trace.adapter_report.metadata["thread_id"] == thread_id(a.scenario.id)
        assert a.trace.events == b.trace.events == c.trace.events
        assert a.verdict == c.verdict
        assert a.trace.adapter_report.metadata["graph_path"]
