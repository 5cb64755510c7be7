"""Episodes become rows, and rows become the very same `EpisodeTrace` again."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.adapters import Profile, baseline
from cavbench.evaluation import evaluate
from cavbench.runner import run_episode
from cavbench.scenarios import load_pack
from cavbench.tables import CellContext, CellTables, EpisodeKey, Table, rebuild_trace
from cavbench.trace import AdapterReport, EpisodeTrace, EventType, LedgerRow, TraceEvent

CONTEXT = CellContext(
    sweep="s",
    cell="profile=direct/…",
    keys={
        "profile": "direct",
        "adapter": "baseline",
        "pack_id": "core-v1",
        "scenarios": "all",
        "scoring_rule": "v1",
        "seeds": "0-0",
    },
    factors=(),
    pack_version="1",
    pack_digest="sha256:0",
)


def _round_trip(traces: list[EpisodeTrace], verdicts: list[Any]) -> dict[str, EpisodeTrace]:
    tables = CellTables(CONTEXT)
    for n, (trace, verdict) in enumerate(zip(traces, verdicts, strict=True)):
        tables.add(
            EpisodeKey(f"e{n}", trace.scenario_id, "stable_happy_path", trace.seed, 0),
            trace,
            verdict,
        )
    built = tables.build()
    grouped: dict[Table, dict[str, list[dict[str, Any]]]] = {}
    for table in (Table.EVENTS, Table.LEDGER, Table.STATES):
        grouped[table] = defaultdict(list)
        for row in built[table].to_pylist():
            grouped[table][row["episode_id"]].append(row)
    return {
        row["episode_id"]: rebuild_trace(
            row,
            grouped[Table.EVENTS][row["episode_id"]][::-1],  # any order
            grouped[Table.LEDGER][row["episode_id"]][::-1],
            grouped[Table.STATES][row["episode_id"]],
        )
        for row in built[Table.EPISODES].to_pylist()
    }


@pytest.mark.parametrize("profile", list(Profile))
def test_every_core_v1_trace_survives_the_tables(profile: Profile) -> None:
    pack = load_pack("core-v1")
    adapter = baseline(profile)
    traces = [run_episode(s, adapter, seed=0, run_id=f"r-{s.id}") for s in pack.scenarios]
    verdicts = [evaluate(s, t) for s, t in zip(pack.scenarios, traces, strict=True)]
    rebuilt = _round_trip(traces, verdicts)
    for n, (scenario, trace) in enumerate(zip(pack.scenarios, traces, strict=True)):
        again = rebuilt[f"e{n}"]
        assert again.as_json() == trace.as_json()
        assert evaluate(scenario, again) == verdicts[n]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=4)
refs = st.lists(st.text(min_size=1, max_size=6), max_size=3).map(tuple)
optional_text = st.none() | st.text(max_size=6)

events = st.builds(
    TraceEvent,
    seq=st.integers(0, 1000),
    event_type=st.sampled_from(list(EventType)),
    source=st.text(min_size=1, max_size=6),
    tool_name=optional_text,
    args=json_objects,
    resource_refs=refs,
    versions_before=st.dictionaries(
        st.text(max_size=4), st.none() | st.integers(0, 99), max_size=2
    ),
    versions_after=st.dictionaries(st.text(max_size=4), st.none() | st.integers(0, 99), max_size=2),
    logical_operation_id=optional_text,
    idempotency_key=optional_text,
    response_status=optional_text,
    fault_id=optional_text,
    metadata=json_objects,
)
ledger_rows = st.builds(
    LedgerRow,
    effect_id=st.text(max_size=6),
    seq=st.integers(0, 1000),
    effect_type=st.text(max_size=6),
    logical_operation_id=st.text(max_size=6),
    idempotency_key=optional_text,
    resource_ref=st.text(max_size=6),
    payload=json_objects,
    compensation_for=optional_text,
)
states = st.dictionaries(
    st.text(max_size=4),
    st.dictionaries(st.text(max_size=4), json_objects, max_size=3),  # may be empty
    max_size=3,
)
reports = st.builds(
    AdapterReport,
    adapter_name=st.text(max_size=6),
    adapter_version=st.text(max_size=6),
    final_message=st.text(max_size=10),
    completion_status=st.sampled_from(["success", "partial", "pending_recovery", "failed", "odd"]),
    metadata=st.dictionaries(
        st.text(max_size=5).filter(
            lambda k: (
                k not in {"adapter_name", "adapter_version", "final_message", "completion_status"}
            )
        ),
        json_values,
        max_size=3,
    ),
)
traces = st.builds(
    EpisodeTrace,
    scenario_id=st.just("HP-01"),
    run_id=st.text(max_size=8),
    seed=st.integers(0, 2**31),
    events=st.lists(events, max_size=5).map(tuple),
    final_state=states,
    side_effects=st.lists(ledger_rows, max_size=3).map(tuple),
    adapter_report=reports,
)


@settings(max_examples=60, deadline=None)
@given(trace=traces)
def test_any_trace_survives_the_tables(trace: EpisodeTrace) -> None:
    scenario = load_pack("core-v1").get("HP-01")
    verdict = evaluate(scenario, trace)
    again = _round_trip([trace], [verdict])["e0"]
    assert again.as_json() == trace.as_json()
