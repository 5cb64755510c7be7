"""Run episodes: a fresh environment per (scenario, seed), the adapter acting through its
session, the trace frozen, then scored. Also replay: re-score a recorded trace."""

from __future__ import annotations

import gc
import re
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

from cavbench.adapters import AdapterFailure, AdapterResult, ExecutionAdapter
from cavbench.errors import CacheMissError, SelectionError
from cavbench.evaluation import ScoringRule, Verdict, evaluate
from cavbench.runtime import Environment
from cavbench.scenarios import Family, Scenario, ScenarioPack
from cavbench.trace import (
    JSON,
    AdapterReport,
    AgentTranscript,
    CompletionStatus,
    EpisodeTrace,
    JSONObject,
)

_SECRET_MARKERS = ("token", "secret", "password", "credential", "authorization", "api_key")
REDACTED = "[REDACTED]"


@dataclass(frozen=True, slots=True)
class Episode:
    """One scored episode."""

    scenario: Scenario
    adapter_name: str
    seed: int
    trace: EpisodeTrace
    verdict: Verdict


_SECRET = re.compile("|".join(_SECRET_MARKERS), re.IGNORECASE)


def _secret(key: str) -> bool:
    return _SECRET.search(key) is not None


_JSON_SCALARS = (str, int, float, bool, type(None))


def redact(value: object) -> JSON:
    """A JSON-safe copy of untrusted report data with values under secret-looking keys
    replaced (CAV-Bench copied reports verbatim, secrets included). Non-string keys become
    strings; sets, tuples and other objects become lists or their `repr`."""
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, dict):
        out: dict[str, JSON] = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else repr(key)
            out[name] = REDACTED if _secret(name) else redact(item)
        return out
    if isinstance(value, list | tuple):
        if all(type(v) is str for v in value):  # the common case: a list of notes
            return list(value)
        return [redact(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((redact(v) for v in value), key=repr)
    return repr(value)[:200]


def _report(adapter: ExecutionAdapter, result: object) -> AdapterReport:
    """Turn whatever the adapter returned into a report record, trusting none of it."""
    name, version = (
        str(getattr(adapter, "name", "unknown")),
        str(getattr(adapter, "version", "0.0.0")),
    )
    if not isinstance(result, AdapterResult):
        return AdapterReport(
            name,
            version,
            "",
            CompletionStatus.SUCCESS.value,
            {"invalid_result": repr(result)[:200]},
        )
    status = result.completion_status
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    cleaned = redact(
        {k: v for k, v in metadata.items() if k not in ("adapter_name", "adapter_version")}
    )
    return AdapterReport(
        adapter_name=name,
        adapter_version=version,
        final_message=str(result.final_message),
        completion_status=status.value if isinstance(status, Enum) else str(status),
        metadata=cleaned if isinstance(cleaned, dict) else {},
    )


def run_episode(
    scenario: Scenario,
    adapter: ExecutionAdapter,
    *,
    seed: int = 0,
    run_id: str = "",
    repetition: int = 0,
) -> EpisodeTrace:
    """Run one episode. Any exception raised while the adapter runs — its own bug, or a
    facade call the world refused (an unknown resource, say) — is recorded as a `run_error`
    event carrying the traceback, not propagated: the episode scores as failed and a sweep
    goes on. A `CacheMissError` (an offline cache or a replay that lacks an answer) is the
    harness's configuration failing, not the adapter: it propagates and fails the job."""
    env = Environment(scenario, seed=seed, run_id=run_id, repetition=repetition)
    agent: AgentTranscript | None = None
    try:
        result = adapter.run(env.session())
        report = _report(adapter, result)
        found = getattr(result, "agent", None)
        agent = found if isinstance(found, AgentTranscript) else None
    except CacheMissError:
        raise
    except Exception as exc:  # the adapter is untrusted code; record and carry on
        env.run_error(f"{type(exc).__name__}: {exc}", traceback.format_exc())
        kept = redact(exc.metadata) if isinstance(exc, AdapterFailure) else {}
        report = AdapterReport(
            str(getattr(adapter, "name", "unknown")),
            str(getattr(adapter, "version", "0.0.0")),
            "",
            CompletionStatus.FAILED.value,
            kept if isinstance(kept, dict) else {},
        )
    return env.finalize(report, agent)


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
    The old thresholds are restored afterwards; cycles are still collected, just less often.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], threshold), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run_episodes(
    pack: ScenarioPack,
    adapter: ExecutionAdapter,
    *,
    scenario_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    seed: int = 0,
    rule: ScoringRule | str = ScoringRule.V1,
    run_id: str = "",
) -> list[Episode]:
    """Run and score `adapter` on the selected scenarios of `pack`."""
    scenarios = select(pack, scenario_ids, families)
    with relaxed_gc():
        return list(iter_episodes(scenarios, adapter, seed=seed, rule=rule, run_id=run_id))


def iter_episodes(
    scenarios: Iterable[Scenario],
    adapter: ExecutionAdapter,
    *,
    seed: int = 0,
    rule: ScoringRule | str = ScoringRule.V1,
    run_id: str = "",
) -> Iterable[Episode]:
    rule = ScoringRule(rule)
    name = str(getattr(adapter, "name", "unknown"))
    for scenario in scenarios:
        trace = run_episode(
            scenario, adapter, seed=seed, run_id=f"{scenario.id}::{run_id}" if run_id else ""
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
