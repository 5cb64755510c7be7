"""Issue 9: the eleven classes of edge-case documents on which cavbench's `v1` verdicts
differed from CAV-Bench's. Each either matches the reference or is refused at load with a
message (docs/design/v1-quirks-and-bugs.md says which and why)."""

from __future__ import annotations

from typing import Any

import pytest

from cavbench.errors import ScenarioError
from cavbench.scenarios import parse_scenario
from cavbench.trace import EventType

STATE = {"order": {"O-1": {"status": "open", "amount": 5, "version": 1}}}


def _commits(run: Any) -> int:
    return sum(1 for e in run.trace.events if e.event_type is EventType.SIDE_EFFECT_COMMIT)


# 1. depends_on "" is no dependency ---------------------------------------------------------
def test_1_empty_depends_on_is_no_dependency(kit: Any) -> None:
    step = kit.write(
        "w1", "order", "O-1", {"status": "x"}, depends_on="", trigger="on_dependency_success"
    )
    run = kit.episode(kit.scenario(state=STATE, steps=[step]), "direct")
    assert _commits(run) == 1


# 2, 3. boolean max_amount compares as a number ----------------------------------------------
@pytest.mark.parametrize("where", ["policy", "delegation"])
def test_2_3_boolean_limits_block_like_numbers(kit: Any, where: str) -> None:
    step = kit.write("w1", "order", "O-1", {"status": "x"}, action_amount=5)
    parts: dict[str, Any] = {"state": STATE, "steps": [step]}
    if where == "policy":
        parts["policy"] = {"allowed_scope": {"max_amount": True}}
    else:
        parts["principal"] = {
            "principal_id": "p",
            "tenant_id": "t",
            "delegation": {"max_amount": True},
        }
    run = kit.episode(kit.scenario(**parts), "policy_gated")
    assert _commits(run) == 0  # 5 > True (1): blocked, as in the reference


# 4. item_ids: plain set logic -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("wanted", "allowed", "commits"),
    [
        (["1"], [1], 0),  # 1 is not "1": no coercion
        ([1], [1, 2], 1),
        ("ab", "abc", 1),  # a bare string is its characters
        ("abd", "abc", 0),
    ],
)
def test_4_item_ids_use_plain_set_logic(kit: Any, wanted: Any, allowed: Any, commits: int) -> None:
    step = kit.write("w1", "order", "O-1", {"status": "x"}, action_scope={"item_ids": wanted})
    scenario = kit.scenario(
        state=STATE, steps=[step], policy={"allowed_scope": {"item_ids": allowed}}
    )
    assert _commits(kit.episode(scenario, "policy_gated")) == commits


# 5. a non-integer version is refused ---------------------------------------------------------
@pytest.mark.parametrize("version", [True, 1.5, "1"])
def test_5_non_integer_versions_are_refused(kit: Any, version: Any) -> None:
    doc = kit.doc(state={"order": {"O-1": {"version": version}}})
    with pytest.raises(ScenarioError, match=r"O-1\.version.*integer"):
        parse_scenario(doc, "edge.json")


# 6 (list value in where) and 11 (string collection) are in tests/scenarios/test_predicates.py.


# 7. effect ids count from eff-0 --------------------------------------------------------------
def test_7_effect_ids_count_from_zero(kit: Any) -> None:
    steps = [kit.write("w1", "order", "O-1", {"status": "x"})]
    run = kit.episode(kit.scenario(state=STATE, steps=steps), "direct")
    assert [r.effect_id for r in run.trace.side_effects] == ["eff-0"]


# 8. one fault id fires once, even when listed twice on one hook -------------------------------
def test_8_a_duplicated_fault_id_fires_once(kit: Any) -> None:
    hook = "after_read:order:O-1"
    injections = [
        kit.mutation("dup", hook, "order", "O-1", {"status": "a"}),
        kit.mutation("dup", hook, "order", "O-1", {"status": "b"}),
    ]
    steps = [kit.read("r1", "order", "O-1")]
    run = kit.episode(kit.scenario(state=STATE, steps=steps, injections=injections), "direct")
    mutations = [e for e in run.trace.events if e.event_type is EventType.EXTERNAL_MUTATION]
    assert len(mutations) == 1
    assert run.trace.final_state["order"]["O-1"]["status"] == "a"


# 9. affects_step "" falls back to the hook's step; a number targets no step --------------------
@pytest.mark.parametrize(("target", "failed"), [("", True), (7, False), (0, True)])
def test_9_affects_step_fallback(kit: Any, target: Any, failed: bool) -> None:
    fault = kit.fault("f", "before_commit_step:w1", "downstream_failure", affects_step=target)
    steps = [kit.write("w1", "order", "O-1", {"status": "x"})]
    run = kit.episode(kit.scenario(state=STATE, steps=steps, injections=[fault]), "direct")
    assert (_commits(run) == 0) is failed


def test_9_a_failure_without_any_target_step_is_refused(kit: Any) -> None:
    doc = kit.doc(injections=[kit.fault("f", "nohook", "downstream_failure")])
    with pytest.raises(ScenarioError, match="affects_step"):
        parse_scenario(doc, "edge.json")


# 10. predicates see events in the reference's form -------------------------------------------
def test_10_clarification_has_no_tool_name_and_non_tool_events_no_args(kit: Any) -> None:
    steps = [{"step_id": "c1", "kind": "clarify"}]
    goal = [
        kit.pred(
            "count_eq",
            collection="events",
            where={"event_type": "clarification", "tool_name": None, "args": None},
            value=1,
        ),
        kit.pred(
            "count_eq",
            collection="events",
            where={"event_type": "user_input", "args": None},
            value=1,
        ),
    ]
    run = kit.episode(kit.scenario(state=STATE, steps=steps, goal=goal), "direct")
    assert run.verdict.outcome_success is True


# refusals for what the reference crashes on -----------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"allowed_scope": {"max_amount": "10"}}, "max_amount"),
        ({"allowed_scope": {"item_ids": [["a"]]}}, "item_ids"),
        ({"allowed_scope": {"item_ids": 5}}, "item_ids"),
    ],
)
def test_uncomparable_limits_are_refused(kit: Any, policy: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(kit.doc(policy=policy), "edge.json")


# the "claiming failed never raises a score" promise ----------------------------------------------
def test_a_blanket_failed_claim_gains_under_v1_and_is_an_underclaim_under_v1_strict() -> None:
    from cavbench.adapters import AdapterResult, baseline
    from cavbench.runner import run_episodes
    from cavbench.scenarios import load_pack

    class AlwaysFailed:
        def __init__(self, profile: str) -> None:
            self.inner = baseline(profile)
            self.name, self.version = self.inner.name, self.inner.version

        def run(self, session: Any) -> AdapterResult:
            result = self.inner.run(session)
            return AdapterResult(result.final_message, completion_status="failed")

    pack = load_pack("core-v1")
    honest = run_episodes(pack, baseline("commit_guarded"), rule="v1_strict")
    blanket = run_episodes(pack, AlwaysFailed("commit_guarded"), rule="v1_strict")
    assert sum(e.verdict.commit_valid_success for e in honest) == 30
    assert sum(e.verdict.commit_valid_success for e in blanket) == 0
    assert any("OR_UNDERCLAIMED_REPORT" in e.verdict.failure_codes for e in blanket)
    v1 = run_episodes(pack, AlwaysFailed("commit_guarded"), rule="v1")
    gained = [e.scenario.id for e in v1 if e.verdict.commit_valid_success]
    assert len(gained) == 31  # v1 reads the report only for overclaims: ER-08 turns valid
