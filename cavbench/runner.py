"""Run episodes: a fresh environment per (scenario, seed), the adapter acting through its
session, the trace frozen, then scored. Also replay: re-score a recorded trace."""

from __future__ import annotations

import gc
import signal
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

from cavbench.adapters import AdapterFailure, AdapterResult, BaselineAdapter, ExecutionAdapter
from cavbench.errors import CacheMissError, SelectionError
from cavbench.evaluation import ScoringRule, Verdict, evaluate
from cavbench.redaction import redact, safe_text
from cavbench.runtime import Environment
from cavbench.scenarios import Family, Scenario, ScenarioPack
from cavbench.trace import (
    JSON,
    AdapterReport,
    AgentTranscript,
    CompletionStatus,
    EpisodeStatus,
    EpisodeTrace,
    JSONObject,
    fast_init,
)


@fast_init
@dataclass(frozen=True, slots=True)
class Episode:
    """One scored episode."""

    scenario: Scenario
    adapter_name: str
    seed: int
    trace: EpisodeTrace
    verdict: Verdict


def _attr(adapter: object, name: str, default: str) -> str:
    """An adapter's `name` or `version` as writable text, whatever the attribute does."""
    try:
        return safe_text(str(getattr(adapter, name, default)))
    except Exception:
        return default


def _report(adapter: ExecutionAdapter, result: object) -> AdapterReport:
    """Turn whatever the adapter returned into a report record, trusting none of it."""
    name, version = _attr(adapter, "name", "unknown"), _attr(adapter, "version", "0.0.0")
    if not isinstance(result, AdapterResult):
        return AdapterReport(
            name,
            version,
            "",
            CompletionStatus.SUCCESS.value,
            {"invalid_result": redact(result)},
        )
    status = result.completion_status
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    cleaned = redact(
        {k: v for k, v in metadata.items() if k not in ("adapter_name", "adapter_version")}
    )
    return AdapterReport(  # positional (the field order): once per episode
        name,
        version,
        safe_text(str(result.final_message)),
        safe_text(status.value if isinstance(status, Enum) else str(status)),
        cleaned if isinstance(cleaned, dict) else {},
    )


_ENGINE_KEYS = {"adapter_name", "adapter_version", "notes"}


def _engine_report(adapter: BaselineAdapter, result: AdapterResult) -> AdapterReport:
    """`_report` of our own baseline engine's result (`BaselineAdapter.finish`), without the
    checks it needs against untrusted adapters: the same record, for less (every episode of
    a baseline sweep goes through here)."""
    metadata = result.metadata
    notes = metadata.get("notes")
    status = result.completion_status
    if (
        metadata.keys() != _ENGINE_KEYS
        or type(notes) is not list
        or not isinstance(status, CompletionStatus)
        or type(result.final_message) is not str
    ):
        return _report(adapter, result)  # not the shape `finish` builds
    cleaned: list[JSON] = []
    for note in notes:
        if type(note) is not str:
            return _report(adapter, result)
        cleaned.append(safe_text(note))
    return AdapterReport(
        adapter.name, adapter.version, result.final_message, status.value, {"notes": cleaned}
    )


def _describe(exc: BaseException) -> str:
    """`Type: message`, even for an exception whose `__str__` raises."""
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable exception>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _format_traceback(exc: BaseException) -> str:
    try:
        return safe_text("".join(traceback.format_exception(exc)))
    except BaseException:
        return _describe(exc)


def _failed_report(adapter: ExecutionAdapter, exc: BaseException | None = None) -> AdapterReport:
    """The report of an episode the adapter did not finish. An `AdapterFailure` keeps its
    metadata (redacted): what the adapter could say about why it stopped."""
    kept: object = {}
    if isinstance(exc, AdapterFailure):
        try:
            kept = redact(exc.metadata)
        except Exception:  # untrusted: metadata that cannot even be read
            kept = {}
    return AdapterReport(
        _attr(adapter, "name", "unknown"),
        _attr(adapter, "version", "0.0.0"),
        "",
        CompletionStatus.FAILED.value,
        kept if isinstance(kept, dict) else {},
    )


_SIGINTS = [0]
"""How many real Ctrl-C signals this process received (counted by `_count_sigint`)."""
_WATCHING = [False]


def _count_sigint(signum: int, frame: object) -> None:
    _SIGINTS[0] += 1
    signal.default_int_handler(signum, frame)  # type: ignore[arg-type]


def _watch_sigint() -> None:
    """Count real Ctrl-Cs, so a `KeyboardInterrupt` the adapter raised itself can be told
    from the user's. Only from the main thread, and only over Python's default handler."""
    if _WATCHING[0]:
        return
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _count_sigint)
        _WATCHING[0] = True


def _real_interrupt(exc: BaseException, before: int) -> bool:
    """Whether `exc` is a Ctrl-C from the user (or one we cannot tell apart from it)."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    watched = signal.getsignal(signal.SIGINT) is _count_sigint
    return not watched or _SIGINTS[0] != before


class _Outcome:
    """What the adapter's run left: its result, or the exception it raised."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done: threading.Event | None = None  # only when the adapter runs in a thread
        self.result: object = None
        self.error: BaseException | None = None


def _call(adapter: ExecutionAdapter, env: Environment, outcome: _Outcome) -> None:
    try:
        outcome.result = adapter.run(env.session())
    except BaseException as exc:
        outcome.error = exc
    finally:
        assert outcome.done is not None
        outcome.done.set()


def _wait(done: threading.Event, limit: float) -> bool:
    """Wait for the adapter's thread, in short slices: a Ctrl-C the kernel delivers to that
    thread only reaches Python's handler when the main thread runs bytecode again."""
    deadline = time.monotonic() + limit  # a limit, not a result: never recorded
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return done.is_set()
        if done.wait(min(left, 0.05)):
            return True


def run_episode(
    scenario: Scenario,
    adapter: ExecutionAdapter,
    *,
    seed: int = 0,
    run_id: str = "",
    repetition: int = 0,
    time_limit: float | None = None,
) -> EpisodeTrace:
    """Run one episode. Whatever the adapter raises — its own bug, a facade call the world
    refused, `SystemExit`, `GeneratorExit`, any `BaseException` — is recorded as a
    `run_error` event carrying the traceback, not propagated: the episode scores as failed
    (status `adapter_error`) and a sweep goes on. Only a real Ctrl-C stops it.

    With `time_limit` (seconds of wall clock), the adapter runs in a daemon thread; past
    the limit the episode is recorded with status `timeout`, its world is closed (any
    further facade call from the runaway thread raises `EpisodeClosed`) and the thread is
    abandoned. Without a limit the adapter runs in the calling thread, as fast as before;
    there a `KeyboardInterrupt` stops the run only if it came from a real Ctrl-C (counted
    by a SIGINT handler installed over Python's default one, main thread only)."""
    # Our own baseline engine (exactly that class, not a wrapper) never edits what it is
    # handed nor reaches past the facade: it may share the pack's originals, which keeps
    # the baseline hot path free of the per-episode copies every other adapter gets.
    _watch_sigint()
    trusted = type(adapter) is BaselineAdapter
    env = Environment(
        scenario, seed=seed, run_id=run_id, repetition=repetition, isolate=not trusted
    )
    try:
        return _run(scenario, adapter, env, time_limit, run_id)
    finally:
        env.close()  # a session the adapter kept can do nothing after its episode


def _run(
    scenario: Scenario,
    adapter: ExecutionAdapter,
    env: Environment,
    time_limit: float | None,
    run_id: str,
) -> EpisodeTrace:
    outcome = _Outcome()
    interrupts = _SIGINTS[0]
    if time_limit is None:
        try:
            outcome.result = adapter.run(env.session())
        except BaseException as exc:  # untrusted code: recorded, never propagated
            if _real_interrupt(exc, interrupts):
                raise  # the user's Ctrl-C stops the run
            outcome.error = exc
    else:
        outcome.done = threading.Event()
        worker = threading.Thread(
            target=_call, args=(adapter, env, outcome), name=f"adapter:{run_id}", daemon=True
        )
        worker.start()
        if not _wait(outcome.done, time_limit):
            env.close()
            env.run_error(
                f"EpisodeTimeout: the adapter ran past the {time_limit:g} s limit",
                "",
                EpisodeStatus.TIMEOUT.value,
            )
            return env.finalize(_failed_report(adapter), None, env.executed_digest(scenario))
    if isinstance(outcome.error, CacheMissError):
        # An offline cache or a replay that lacks an answer is the harness's configuration
        # failing, not the adapter: it propagates and fails the job.
        raise outcome.error
    if outcome.error is not None:
        env.run_error(_describe(outcome.error), _format_traceback(outcome.error))
        report = _failed_report(adapter, outcome.error)
        return env.finalize(report, None, env.executed_digest(scenario))
    agent: AgentTranscript | None = None
    result = outcome.result
    if type(adapter) is BaselineAdapter and type(result) is AdapterResult:
        return env.finalize(_engine_report(adapter, result), None, env.executed_digest(scenario))
    try:
        report = _report(adapter, result)
        found = getattr(result, "agent", None)
        agent = found if isinstance(found, AgentTranscript) else None
    except BaseException as exc:  # a result whose attributes raise
        if _real_interrupt(exc, interrupts):
            raise
        env.run_error(_describe(exc), _format_traceback(exc))
        report = _failed_report(adapter)
    return env.finalize(report, agent, env.executed_digest(scenario))


def replay(
    scenario: Scenario, trace: EpisodeTrace, rule: ScoringRule | str = ScoringRule.V1
) -> Verdict:
    """Re-score a recorded trace without re-running anything."""
    if trace.scenario_id != scenario.id:
        raise SelectionError(
            f"trace is for scenario {trace.scenario_id!r} but was to be scored as {scenario.id!r} "
            "(fix: pass the trace's own scenario)"
        )
    return evaluate(scenario, trace, rule)


def select(
    pack: ScenarioPack,
    scenario_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
) -> list[Scenario]:
    """Scenarios by explicit id (order kept, duplicates dropped) and/or family."""
    chosen = list(pack.scenarios)
    if scenario_ids:
        wanted = list(dict.fromkeys(scenario_ids))
        unknown = [i for i in wanted if i not in pack.ids]
        if unknown:
            raise SelectionError(f"Unknown scenario id(s) for pack '{pack.pack_id}': {unknown}")
        by_id = {s.id: s for s in pack.scenarios}
        chosen = [by_id[i] for i in wanted]
    if families:
        valid = {f.value for f in Family}
        unknown_f = sorted(set(families) - valid)
        if unknown_f:
            raise SelectionError(f"Unknown family filter(s): {unknown_f} (known: {sorted(valid)})")
        chosen = [s for s in chosen if s.family.value in set(families)]
    if not chosen:
        raise SelectionError("No scenarios selected for this run")
    return chosen


@contextmanager
def relaxed_gc(threshold: int = 50_000) -> Iterator[None]:
    """Run a block of episodes with the cyclic garbage collector mostly out of the way.

    An episode allocates many small objects (events, dicts, tuples) that form no reference
    cycles, so reference counting frees them; but with the default threshold the cyclic
    collector runs every 700 allocations and keeps re-walking the growing set of retained
    traces, which cost about a third of a large run's time (`benchmarks/episodes.py`).
    Whatever existed before the block (the loaded pack, its compiled structures, the
    interpreter's modules) is frozen for its duration (`gc.freeze`): the full collections
    that retained episodes trigger would otherwise walk all of it again, for nothing. The
    old thresholds are restored and the frozen objects returned to the collector afterwards
    (unless someone else had frozen objects already, which is left alone); cycles are still
    collected, just less often.
    """
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(max(old[0], threshold), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


def run_episodes(
    pack: ScenarioPack,
    adapter: ExecutionAdapter,
    *,
    scenario_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    seed: int = 0,
    rule: ScoringRule | str = ScoringRule.V1,
    run_id: str = "",
    time_limit: float | None = None,
) -> list[Episode]:
    """Run and score `adapter` on the selected scenarios of `pack`."""
    scenarios = select(pack, scenario_ids, families)
    with relaxed_gc():
        return list(
            iter_episodes(
                scenarios, adapter, seed=seed, rule=rule, run_id=run_id, time_limit=time_limit
            )
        )


def iter_episodes(
    scenarios: Iterable[Scenario],
    adapter: ExecutionAdapter,
    *,
    seed: int = 0,
    rule: ScoringRule | str = ScoringRule.V1,
    run_id: str = "",
    time_limit: float | None = None,
) -> Iterable[Episode]:
    rule = ScoringRule(rule)
    name = _attr(adapter, "name", "unknown")
    for scenario in scenarios:
        trace = run_episode(
            scenario,
            adapter,
            seed=seed,
            run_id=f"{scenario.id}::{run_id}" if run_id else "",
            time_limit=time_limit,
        )
        yield Episode(scenario, name, seed, trace, evaluate(scenario, trace, rule))


def verdict_row(episode: Episode, profile: str) -> JSONObject:
    """The per-scenario CSV row of `cavbench ablate --format csv` (CAV-Bench conformance)."""
    v = episode.verdict
    row: JSONObject = {
        "scenario_id": v.scenario_id,
        "family": v.family.value,
        "profile": profile,
        "outcome_success": v.outcome_success,
        "policy_aware_outcome_success": v.policy_aware_outcome_success,
        "commit_valid_success": v.commit_valid_success,
    }
    row.update({d.value: s.value for d, s in v.dimensions.items()})
    row["failure_codes"] = ";".join(v.failure_codes)
    row["commit_count"] = v.commit_count
    return row
