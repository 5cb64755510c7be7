"""The LLM adapter's reliability counters (`n_invalid_tool_calls`, `n_retries`) on scripted
episodes with known numbers of bad calls and retries, and on the episodes table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from cavbench.agents import LLMAdapter
from cavbench.agents._reliability import ReliabilityCounts, WriteAttempt
from cavbench.models import AssistantTurn, ScriptedModel, scripted_turn
from cavbench.runner import run_episode
from cavbench.scenarios import Scenario, load_pack
from cavbench.study import compose, run_cell
from cavbench.tables import cell_dirs
from cavbench.trace import AgentTranscript, EpisodeStatus

MK01 = load_pack("mock").get("MK-01")  # refund up to 20 on P-9001 (version 2)
REPORT = {"name": "report_outcome", "arguments": {"status": "success", "message": "ok"}}


def _turn(name: str, arguments: dict[str, Any] | str) -> AssistantTurn:
    return scripted_turn(None, [{"name": name, "arguments": arguments}])


def _agent(turns: Sequence[AssistantTurn], scenario: Scenario = MK01) -> AgentTranscript:
    script = [*turns, scripted_turn(None, [REPORT])]
    adapter = LLMAdapter(model=ScriptedModel(lambda r: script[r.turn]))
    trace = run_episode(scenario, adapter)
    assert trace.status is EpisodeStatus.COMPLETED
    assert trace.agent is not None
    return trace.agent


def _refund(version: int, key: str = "k1", **extra: Any) -> AssistantTurn:
    args = {"payment_id": "P-9001", "amount": 20, "expected_version": version}
    return _turn("issue_refund", {**args, "idempotency_key": key, **extra})


def test_known_bad_calls_and_retries_are_counted_exactly() -> None:
    agent = _agent(
        [
            _turn("refund_everything", {}),  # unknown tool: invalid 1
            _turn("issue_refund", "{not json"),  # malformed: invalid 2 (a write, unnamed)
            _turn("issue_refund", {"payment_id": "P-9001"}),  # missing amount: 3, retry 1
            _turn("issue_refund", {"payment_id": "P-9001", "amount": "20"}),  # mistyped: 4, 2
            _turn("get_payment", {"payment_id": "P-404"}),  # unknown resource: not invalid
            _refund(version=1),  # stale version: CONFLICT, retry 3
            _refund(version=2),  # COMMITTED, retry 4
            _refund(version=3),  # repeating a write that took effect: not a retry
        ]
    )
    replies = [m.content or "" for m in agent.messages if m.role == "tool"]
    assert ['"status":"CONFLICT"' in r for r in replies[5:7]] == [True, False]
    assert '"status":"COMMITTED"' in replies[6]
    assert (agent.n_invalid_tool_calls, agent.n_retries) == (4, 4)


def test_a_write_to_another_resource_or_operation_is_not_a_retry() -> None:
    agent = _agent(
        [
            _turn("issue_refund", {"payment_id": "P-1", "amount": 5}),  # unknown resource
            _refund(version=1),  # another resource: CONFLICT, not a retry
            _refund(version=2, amount=7),  # another amount: another operation, not a retry
            _refund(version=2),  # the conflicted operation again: retry 1
        ]
    )
    assert (agent.n_invalid_tool_calls, agent.n_retries) == (0, 1)


def test_a_clean_episode_counts_nothing() -> None:
    agent = _agent([_turn("get_payment", {"payment_id": "P-9001"}), _refund(version=2)])
    assert (agent.n_invalid_tool_calls, agent.n_retries) == (0, 0)


def test_arguments_the_facade_refuses_are_an_invalid_call() -> None:
    # `ports` is an untyped array, so the schema passes a list nested past what the tables
    # can record; the tool facade refuses it (ToolCallError).
    deep: Any = "443"
    for _ in range(70):
        deep = [deep]
    scenario = load_pack("netops-v1").get("NO-IA-03")
    args = {"firewall_id": "FW-3103", "source": "partner_net", "ports": deep}
    agent = _agent([_turn("apply_acl", args), _turn("apply_acl", args)], scenario)
    replies = [m.content or "" for m in agent.messages if m.role == "tool"]
    assert all("nested more than 64 levels" in r for r in replies[:2])
    assert (agent.n_invalid_tool_calls, agent.n_retries) == (2, 1)


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans()), max_size=12))
def test_retries_never_exceed_the_failed_attempts_before_them(
    calls: list[tuple[str, bool]],
) -> None:
    counts = ReliabilityCounts()
    for tool, took_effect in calls:
        counts.write(WriteAttempt(tool), took_effect=took_effect)
    failed = sum(1 for _, ok in calls[:-1] if not ok)
    assert 0 <= counts.retries <= failed
    # With one tool and nothing resolved, every call after a failure is a retry.
    if {tool for tool, _ in calls} == {"a"}:
        expected = sum(1 for i in range(1, len(calls)) if not calls[i - 1][1])
        assert counts.retries == expected


def test_the_counters_are_episode_columns_null_for_profiles(tmp_path: Path) -> None:
    base = ["scenarios=mock", f"output.root={tmp_path}", "output.progress=false"]
    run_cell(compose([*base, "output.name=p"]))
    (cell,) = cell_dirs(tmp_path / "p")
    rows = pq.read_table(cell / "episodes.parquet").to_pylist()
    assert {(r["n_invalid_tool_calls"], r["n_retries"]) for r in rows} == {(None, None)}
