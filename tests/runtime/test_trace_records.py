"""Trace records survive a JSON round trip unchanged (what replay relies on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cavbench.adapters import baseline
from cavbench.evaluation import evaluate
from cavbench.runner import run_episode
from cavbench.scenarios import load_pack_dir
from cavbench.trace import AdapterReport, EpisodeTrace, EventType, TraceEvent

PROFILES = ["direct", "policy_gated", "commit_guarded", "reconciled", "full_lifecycle"]


@pytest.mark.parametrize("profile", PROFILES)
def test_dev_pack_traces_round_trip(dev_pack_dir: Path, profile: str) -> None:
    for scenario in load_pack_dir(dev_pack_dir).scenarios:
        trace = run_episode(scenario, baseline(profile), seed=4, run_id="rt")
        text = json.dumps(trace.as_json(), sort_keys=True)
        reloaded = EpisodeTrace.from_json(json.loads(text))
        assert json.dumps(reloaded.as_json(), sort_keys=True) == text
        assert reloaded.events == trace.events
        assert reloaded.side_effects == trace.side_effects
        assert reloaded.final_state == trace.final_state
        assert evaluate(scenario, reloaded) == evaluate(scenario, trace)


def test_event_json_has_every_field() -> None:
    event = TraceEvent(seq=3, event_type=EventType.FAULT, fault_id="f")
    assert set(event.as_json()) == {
        "seq",
        "logical_time",
        "event_type",
        "source",
        "tool_name",
        "args",
        "resource_refs",
        "versions_before",
        "versions_after",
        "logical_operation_id",
        "idempotency_key",
        "response_status",
        "fault_id",
        "metadata",
    }
    assert TraceEvent.from_json(event.as_json()) == event


def test_report_defaults_when_absent(kit: Any) -> None:
    trace = run_episode(kit.scenario(), baseline("direct"))
    data = trace.as_json()
    data.pop("adapter_report")
    assert EpisodeTrace.from_json(data).adapter_report == AdapterReport()
