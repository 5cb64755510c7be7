"""Issue 9: no adapter can change another episode, and whatever it raises or however long it
runs, its episode is recorded and the run goes on."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from cavbench.adapters import BASELINE_PROFILES, AdapterResult, baseline
from cavbench.errors import EpisodeClosed, ToolCallError
from cavbench.evaluation import evaluate
from cavbench.runner import Episode, run_episode, run_episodes
from cavbench.runtime import AdapterSession
from cavbench.scenarios import load_pack
from cavbench.trace import EpisodeStatus


def _headline(episodes: list[Episode]) -> tuple[int, int, int]:
    return (
        sum(e.verdict.outcome_success for e in episodes),
        sum(e.verdict.policy_aware_outcome_success for e in episodes),
        sum(e.verdict.commit_valid_success for e in episodes),
    )


class Contaminator:
    """Edits everything it can reach, through base-class methods and private attributes."""

    name = "contaminator"
    version = "0"

    def run(self, session: AdapterSession) -> AdapterResult:
        view = session.scenario
        for step in view.plan.steps:
            dict.clear(step.changes)
            dict.clear(step.args)
            object.__setattr__(step, "step_id", "hijacked")
        dict.clear(view.policy.allowed_scope)
        object.__setattr__(view, "id", "hijacked")
        world: Any = session.tools._world  # type: ignore[attr-defined]
        for bucket in world._initial.values():
            for resource in bucket.values():
                resource.clear()
        for pending in world._faults._by_hook.values():
            for injection in pending:
                injection.payload.clear()
        world._faults._by_hook.clear()
        assert not hasattr(world, "scenario")  # the pack's scenario is not reachable
        return AdapterResult(final_message="done")


def test_contaminating_adapter_first_leaves_the_baselines_headline_unchanged() -> None:
    pack = load_pack("core-v1")
    before = {p: _headline(run_episodes(pack, baseline(p))) for p in BASELINE_PROFILES}
    digests = {s.id: s.digest for s in pack.scenarios}
    tampered = run_episodes(pack, Contaminator())
    # What the contaminator ran is recorded as altered, episode by episode ...
    assert all(e.trace.scenario_digest != digests[e.scenario.id] for e in tampered)
    after = {p: _headline(run_episodes(pack, baseline(p))) for p in BASELINE_PROFILES}
    assert after == before
    assert before["direct"] == (37, 30, 10)
    # ... and every later episode ran the pack's own scenario.
    clean = run_episodes(pack, baseline("direct"))
    assert all(e.trace.scenario_digest == digests[e.scenario.id] for e in clean)


def test_a_kept_session_cannot_act_after_its_episode() -> None:
    kept: list[AdapterSession] = []

    class Keeper:
        name, version = "keeper", "0"

        def run(self, session: AdapterSession) -> AdapterResult:
            kept.append(session)
            return AdapterResult(final_message="")

    scenario = load_pack("core-v1").scenarios[0]
    run_episode(scenario, Keeper())
    with pytest.raises(EpisodeClosed):
        kept[0].clarify("still there?")


class _Raises:
    version = "0"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.name = type(exc).__name__

    def run(self, session: AdapterSession) -> AdapterResult:
        raise self.exc


class _BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class _Custom(BaseException):
    pass


@pytest.mark.parametrize(
    "exc", [SystemExit(0), SystemExit(3), GeneratorExit(), _Custom("x"), _BadStr()]
)
@pytest.mark.parametrize("limit", [None, 5.0])
def test_any_base_exception_is_recorded_on_the_episode(
    exc: BaseException, limit: float | None
) -> None:
    scenario = load_pack("core-v1").scenarios[0]
    trace = run_episode(scenario, _Raises(exc), time_limit=limit)
    assert trace.status is EpisodeStatus.ADAPTER_ERROR
    assert trace.error is not None
    assert type(exc).__name__ in trace.error
    assert trace.adapter_report.completion_status == "failed"


def test_a_sleeping_adapter_times_out_and_its_world_is_closed() -> None:
    calls: list[str] = []

    class Sleeper:
        name, version = "sleeper", "0"

        def run(self, session: AdapterSession) -> AdapterResult:
            time.sleep(0.5)
            try:
                session.clarify("late")
            except EpisodeClosed:
                calls.append("refused")
            return AdapterResult(final_message="")

    scenario = load_pack("core-v1").scenarios[0]
    trace = run_episode(scenario, Sleeper(), time_limit=0.05)
    assert trace.status is EpisodeStatus.TIMEOUT
    assert trace.adapter_report.completion_status == "failed"
    time.sleep(0.8)
    assert calls == ["refused"]
    assert not any(e.event_type.value == "clarification" for e in trace.events)


@pytest.mark.parametrize(
    "value",
    [object(), {1, 2}, b"bytes", 2**63, float("nan"), "\ud800", {"k": [object()]}],
    ids=["object", "set", "bytes", "int64", "nan", "surrogate", "nested"],
)
def test_non_json_arguments_are_the_adapters_failure_not_the_runs(value: object) -> None:
    seen: list[type] = []

    class Writer:
        name, version = "writer", "0"

        def run(self, session: AdapterSession) -> AdapterResult:
            try:
                session.tools.write(
                    step_id="s",
                    tool_name="cancel_order",
                    namespace="order",
                    resource_id="O-1",
                    changes={"status": value},
                    logical_operation_id="op",
                    idempotency_key=None,
                )
            except ToolCallError as exc:
                seen.append(type(exc))
                raise
            return AdapterResult(final_message="")

    pack = load_pack("core-v1")
    episodes = run_episodes(pack, Writer(), scenario_ids=[pack.scenarios[0].id])
    assert seen == [ToolCallError]
    assert episodes[0].trace.status is EpisodeStatus.ADAPTER_ERROR
    assert episodes[0].verdict.outcome_success is False
    refused = [e for e in episodes[0].trace.events if e.response_status == "INVALID"]
    assert len(refused) == 1  # recorded on the episode, even had the adapter caught it
    assert refused[0].metadata["reason"].startswith("write: changes")


def test_a_string_in_a_numeric_field_is_scored_not_raised(kit: Any) -> None:
    scenario = kit.scenario(
        state={"order": {"O-1": {"amount": 5, "version": 1}}},
        goal=[kit.pred("gte", "state.order.O-1.amount", 1)],
    )

    class Stringer:
        name, version = "stringer", "0"

        def run(self, session: AdapterSession) -> AdapterResult:
            session.tools.write(
                step_id="s",
                tool_name="x",
                namespace="order",
                resource_id="O-1",
                changes={"amount": "not a number"},
                logical_operation_id="op",
                idempotency_key=None,
            )
            return AdapterResult(final_message="")

    trace = run_episode(scenario, Stringer())
    assert trace.status is EpisodeStatus.COMPLETED
    assert evaluate(scenario, trace).outcome_success is False


def test_statuses_are_the_shared_vocabulary() -> None:
    assert [s.value for s in EpisodeStatus] == [
        "completed",
        "adapter_error",
        "timeout",
        "infra_error",
    ]
    pack = load_pack("core-v1")
    statuses = Counter(e.trace.status for e in run_episodes(pack, baseline("direct")))
    assert statuses == {EpisodeStatus.COMPLETED: 40}


def test_a_baseline_impostor_subclass_is_isolated_like_any_adapter() -> None:
    from cavbench.adapters import BaselineAdapter

    class Impostor(BaselineAdapter):
        def run(self, session: AdapterSession) -> AdapterResult:
            for step in session.scenario.plan.steps:
                dict.clear(step.changes)
            return super().run(session)

    pack = load_pack("core-v1")
    before = _headline(run_episodes(pack, baseline("direct")))
    template = baseline("direct")
    tampered = run_episodes(pack, Impostor(template.profile, template.capabilities))
    for e in tampered:
        cleared = any(step.changes for step in e.scenario.plan.steps)
        assert (e.trace.scenario_digest != e.scenario.digest) is cleared
    assert _headline(run_episodes(pack, baseline("direct"))) == before


def _in_a_fresh_process(body: str) -> str:
    """Run `body` in a new interpreter and return what it printed. Signal handling is
    process-wide state that the test runner and its plugins share, so the Ctrl-C tests run
    where nothing but cavbench has touched it."""
    import subprocess
    import sys
    import textwrap

    prelude = textwrap.dedent(
        """
        import os, signal, time
        from cavbench.adapters import AdapterResult
        from cavbench.runner import run_episode
        from cavbench.scenarios import load_pack
        scenario = load_pack("core-v1").scenarios[0]
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_keyboard_interrupt_the_adapter_raises_itself_is_recorded() -> None:
    printed = _in_a_fresh_process(
        """
        class Raises:
            name, version = "raises", "0"
            def run(self, session):
                raise KeyboardInterrupt()
        trace = run_episode(scenario, Raises())
        print(trace.status.value, "KeyboardInterrupt" in (trace.error or ""))
        """
    )
    assert printed == f"{EpisodeStatus.ADAPTER_ERROR.value} True"


def test_a_real_ctrl_c_still_stops_the_run() -> None:
    printed = _in_a_fresh_process(
        """
        class Interrupted:
            name, version = "interrupted", "0"
            def run(self, session):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
                return AdapterResult(final_message="")
        try:
            run_episode(scenario, Interrupted())
        except KeyboardInterrupt:
            print("stopped")
        else:
            print("went on")
        """
    )
    assert printed == "stopped"


def test_an_adapter_editing_load_pack_reaches_no_later_cell() -> None:
    class PackEditor:
        name, version = "pack-editor", "0"

        def run(self, session: AdapterSession) -> AdapterResult:
            for scenario in load_pack("core-v1").scenarios:  # the cached pack, it hopes
                for step in scenario.view().plan.steps:
                    dict.clear(step.changes)
                dict.clear(scenario.world.initial_state)
            return AdapterResult(final_message="")

    pack = load_pack("core-v1")
    run_episodes(pack, PackEditor(), scenario_ids=[pack.scenarios[0].id])
    assert _headline(run_episodes(load_pack("core-v1"), baseline("direct"))) == (37, 30, 10)
