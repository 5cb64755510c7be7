"""Target (a): cavbench's v1 evaluator behind the protocol."""

from __future__ import annotations

import pytest

from cavbench.adapters import Profile, baseline
from cavbench.audit import AuditError, load_target, plan_audit
from cavbench.audit._kit import replay
from cavbench.audit.targets.v1 import V1Domain, V1Oracle, V1Tool, verdict_to_score
from cavbench.evaluation import evaluate
from cavbench.runner import run_episode
from cavbench.scenarios import load_pack


@pytest.fixture(scope="module")
def core() -> V1Domain:
    return V1Domain(load_pack("core-v1"))


def test_replaying_the_reference_reproduces_the_full_lifecycle_episode(core: V1Domain) -> None:
    for sid in core.tasks():
        scenario = core.scenario(sid)
        expected = run_episode(scenario, baseline(Profile.FULL_LIFECYCLE))
        world = replay(core.new_world(sid), core.reference(sid))
        got = world.trace()
        assert [e.as_json() for e in got.events] == [e.as_json() for e in expected.events]
        assert got.final_state == expected.final_state
        assert got.side_effects == expected.side_effects
        assert evaluate(scenario, got).as_json() == evaluate(scenario, expected).as_json()


def test_every_reference_ends_with_the_adapters_report(core: V1Domain) -> None:
    for sid in core.tasks():
        assert core.reference(sid)[-1].name == V1Tool.REPORT


def test_copy_and_restore_reproduce_the_world(core: V1Domain) -> None:
    world = replay(core.new_world("ER-04"), core.reference("ER-04")[:4])
    checkpoint = world.checkpoint()
    for action in core.reference("ER-04")[4:]:
        world.apply(action)
    assert world.digest() != checkpoint.digest()
    world.restore(checkpoint)
    assert world.digest() == checkpoint.digest()


def test_net_effects_ignore_environment_changes_and_compensated_attempts(core: V1Domain) -> None:
    plan = plan_audit(load_target("v1/core-v1").correct, ["ST-03", "ER-06", "ER-09", "HP-01"])
    by_task = {tp.task: tp for tp in plan.tasks}
    assert not by_task["ST-03"].changes_state  # the only change is the fault's
    assert not by_task["ER-06"].changes_state  # address changed, then reverted
    assert by_task["ER-09"].changes_state
    assert by_task["ER-09"].has_near_miss
    assert by_task["HP-01"].changes_state


def test_verdict_components_conjoin_to_commit_valid_success(core: V1Domain) -> None:
    for sid in core.tasks():
        trace = replay(core.new_world(sid), core.reference(sid)[:2]).trace()
        verdict = evaluate(core.scenario(sid), trace)
        score = verdict_to_score(verdict)
        assert (
            score.passed == verdict.commit_valid_success == all(c.passed for c in score.components)
        )


def test_unknown_scenario_is_a_clear_error(core: V1Domain) -> None:
    with pytest.raises(AuditError, match="no scenario 'XX-01'"):
        core.scenario("XX-01")
    assert V1Oracle(core).name == "v1"


def test_declared_references_replace_the_recorded_ones() -> None:
    pack = load_pack("mock")
    sid = pack.ids[0]
    domain = V1Domain(pack, declared={sid: ()})
    assert domain.reference(sid) == ()
    with pytest.raises(AuditError, match="unknown scenarios"):
        V1Domain(pack, declared={"nope": ()})
