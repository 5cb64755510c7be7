"""Replay correction: re-derive terminal states from recorded actions, re-score, compare.

Frozen episode records hold the actions an agent took and the label a scorer recorded at
the time. Correction replays each record's actions on a fresh world of the target (its
correct, repaired oracle), scores after the session like the original scorer did, and
tabulates labels and success before and after, per episode, per task and per agent, with
task-clustered bootstrap intervals.

Only the protocol is used, so any target whose reference state can be rebuilt from the
recorded actions can be corrected; one whose cannot is out of reach of this method.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

import numpy as np

from cavbench.audit._bootstrap import Interval, cluster_bootstrap
from cavbench.audit._protocol import (
    Action,
    AuditError,
    Component,
    JSONObject,
    ScoreResult,
    TargetFactory,
    canonical_json,
)

RECORDS_SCHEMA_VERSION: Final = "1"
RECORDS_FILE: Final = "episodes.jsonl"
MANIFEST_FILE: Final = "manifest.json"
SUCCESS: Final = "success"
"""The measure name for the overall verdict; component measures are ``component:<name>``."""


class Agent(StrEnum):
    """The scripted agents whose episodes are frozen."""

    DO_NOTHING = "do_nothing"
    """Ends the session without acting."""
    PARTIAL = "partial"
    """Performs a seeded random-length proper prefix of the reference."""
    CORRECT = "correct"
    """Performs the reference."""


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One archived episode: what the agent did and the label recorded at the time."""

    record_id: str
    target: str
    task: str
    agent: Agent
    repetition: int
    actions: tuple[Action, ...]
    label: ScoreResult

    def as_json(self) -> JSONObject:
        return {
            "record_id": self.record_id,
            "target": self.target,
            "task": self.task,
            "agent": self.agent.value,
            "repetition": self.repetition,
            "actions": [a.as_json() for a in self.actions],
            "label": self.label.as_json(),
        }

    @classmethod
    def from_json(cls, data: JSONObject, where: str) -> EpisodeRecord:
        try:
            label, actions = data["label"], data["actions"]
            if not isinstance(label, dict) or not isinstance(actions, list):
                raise ValueError("'label' must be an object and 'actions' a list")
            comps = label.get("components") or {}
            if not isinstance(comps, dict):
                raise ValueError("'label.components' must be an object")
            return cls(
                record_id=str(data["record_id"]),
                target=str(data["target"]),
                task=str(data["task"]),
                agent=Agent(str(data["agent"])),
                repetition=int(str(data["repetition"])),
                actions=tuple(Action.from_json(a) for a in actions if isinstance(a, dict)),
                label=ScoreResult(
                    bool(label["passed"]),
                    tuple(Component(str(k), bool(v)) for k, v in comps.items()),
                ),
            )
        except (KeyError, ValueError) as exc:
            raise AuditError(
                f"{where}: not an episode record ({type(exc).__name__}: {exc}) "
                "(fix: regenerate with `cavbench audit record`)"
            ) from exc


def _agent_actions(
    agent: Agent,
    reference: Sequence[Action],
    closing: Action | None,
    rng: np.random.Generator,
) -> tuple[Action, ...]:
    match agent:
        case Agent.DO_NOTHING:
            acted: tuple[Action, ...] = ()
        case Agent.PARTIAL:
            cut = int(rng.integers(1, len(reference))) if len(reference) > 1 else 0
            acted = tuple(reference[:cut])
        case Agent.CORRECT:
            acted = tuple(reference)
    return acted + ((closing,) if closing is not None else ())


def record_episodes(
    factory: TargetFactory,
    *,
    target: str,
    agents: Sequence[Agent] = tuple(Agent),
    repetitions: int = 3,
    seed: int = 0,
    tasks: Sequence[str] | None = None,
) -> tuple[EpisodeRecord, ...]:
    """Run the scripted agents on ``factory``'s target and record what a post-session
    scorer says: the session is ended (the closing action, which may score internally),
    then ``score()`` is asked once more, as an evaluation harness does afterwards."""
    probe = factory()
    chosen = tuple(probe.tasks() if tasks is None else tasks)
    out: list[EpisodeRecord] = []
    for t_index, task in enumerate(chosen):
        reference = tuple(probe.reference(task))
        closing = probe.closing_action(task)
        for a_index, agent in enumerate(agents):
            for rep in range(repetitions):
                rng = np.random.default_rng([seed, t_index, a_index, rep])
                actions = _agent_actions(agent, reference, closing, rng)
                live = factory()
                live.reset(task)
                for action in actions:
                    live.apply(action)
                out.append(
                    EpisodeRecord(
                        record_id=f"{task}/{agent.value}/{rep}",
                        target=target,
                        task=task,
                        agent=agent,
                        repetition=rep,
                        actions=actions,
                        label=live.score(),
                    )
                )
    return tuple(out)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_records(
    records: Sequence[EpisodeRecord], out_dir: Path, *, provenance: JSONObject
) -> Path:
    """Write ``episodes.jsonl`` and ``manifest.json`` (with the file's SHA-256) to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    body = "".join(canonical_json(r.as_json()) + "\n" for r in records).encode()
    (out_dir / RECORDS_FILE).write_bytes(body)
    manifest: JSONObject = {
        "schema_version": RECORDS_SCHEMA_VERSION,
        "records_file": RECORDS_FILE,
        "sha256": _sha256(body),
        "rows": len(records),
        **provenance,
    }
    path = out_dir / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


@dataclass(frozen=True, slots=True)
class RecordSet:
    records: tuple[EpisodeRecord, ...]
    manifest: JSONObject
    source: Path

    @property
    def target(self) -> str:
        targets = {r.target for r in self.records}
        return targets.pop() if len(targets) == 1 else ",".join(sorted(targets))


def read_records(path: Path) -> RecordSet:
    """Read a records directory (with its manifest, checksum verified) or a bare JSONL file."""
    manifest: JSONObject = {}
    if path.is_dir():
        mpath = path / MANIFEST_FILE
        if not mpath.is_file():
            raise AuditError(f"{path}: no {MANIFEST_FILE} (fix: point at the records folder)")
        manifest = json.loads(mpath.read_text())
        file = path / str(manifest.get("records_file", RECORDS_FILE))
        if not file.is_file():
            raise AuditError(f"{file}: missing (the manifest names it)")
        body = file.read_bytes()
        if manifest.get("sha256") != _sha256(body):
            raise AuditError(
                f"{file}: SHA-256 does not match {mpath} (the records were changed; "
                "fix: restore them from git or regenerate with `cavbench audit record`)"
            )
    elif path.is_file():
        file, body = path, path.read_bytes()
    else:
        raise AuditError(f"{path}: no such records file or folder")
    records = []
    for n, line in enumerate(body.decode().splitlines(), start=1):
        if line.strip():
            records.append(EpisodeRecord.from_json(json.loads(line), f"{file}:{n}"))
    if not records:
        raise AuditError(f"{file}: holds no records")
    return RecordSet(tuple(records), manifest, path)


@dataclass(frozen=True, slots=True)
class CorrectedEpisode:
    """One record's label as recorded and as re-derived by replay on a fresh world."""

    record_id: str
    task: str
    agent: Agent
    repetition: int
    actions: int
    before: ScoreResult
    after: ScoreResult

    @property
    def changed(self) -> bool:
        return self.before != self.after


def replay_records(
    records: Sequence[EpisodeRecord], factory: TargetFactory
) -> tuple[CorrectedEpisode, ...]:
    """Replay each record's actions on a fresh target and score after the session."""
    out = []
    for record in records:
        target = factory()
        target.reset(record.task)
        for action in record.actions:
            target.apply(action)
        out.append(
            CorrectedEpisode(
                record.record_id,
                record.task,
                record.agent,
                record.repetition,
                len(record.actions),
                record.label,
                target.score(),
            )
        )
    return tuple(out)


def measures(episodes: Sequence[CorrectedEpisode]) -> tuple[str, ...]:
    """``success`` then ``component:<name>`` for every component seen, in first-seen order."""
    names: dict[str, None] = {}
    for e in episodes:
        for c in (*e.before.components, *e.after.components):
            names.setdefault(c.name, None)
    return (SUCCESS, *(f"component:{n}" for n in names))


def _value(result: ScoreResult, measure: str) -> float | None:
    if measure == SUCCESS:
        return float(result.passed)
    comp = result.component(measure.removeprefix("component:"))
    return None if comp is None else float(comp.passed)


@dataclass(frozen=True, slots=True)
class TaskCorrection:
    """Counts for one task × agent × measure."""

    task: str
    agent: Agent
    measure: str
    episodes: int
    passed_before: int
    passed_after: int


@dataclass(frozen=True, slots=True)
class SummaryCorrection:
    """Rates for one agent (or ``all``) × measure, with task-clustered intervals."""

    agent: str
    measure: str
    episodes: int
    tasks: int
    passed_before: int
    passed_after: int
    before: Interval
    after: Interval
    delta: Interval


def per_task(episodes: Sequence[CorrectedEpisode]) -> tuple[TaskCorrection, ...]:
    cells: dict[tuple[str, Agent, str], list[tuple[float, float]]] = defaultdict(list)
    for e in episodes:
        for m in measures(episodes):
            b, a = _value(e.before, m), _value(e.after, m)
            if b is not None and a is not None:
                cells[(e.task, e.agent, m)].append((b, a))
    return tuple(
        TaskCorrection(task, agent, m, len(v), int(sum(b for b, _ in v)), int(sum(a for _, a in v)))
        for (task, agent, m), v in sorted(cells.items())
    )


def summarise(
    episodes: Sequence[CorrectedEpisode], *, seed: int = 0, num_resamples: int = 2000
) -> tuple[SummaryCorrection, ...]:
    """Per agent and overall (``all``), per measure: before, after and their difference."""
    groups: list[tuple[str, list[CorrectedEpisode]]] = [
        (agent.value, [e for e in episodes if e.agent is agent]) for agent in Agent
    ]
    groups.append(("all", list(episodes)))
    out = []
    for label, group in groups:
        for m in measures(episodes):
            pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for e in group:
                b, a = _value(e.before, m), _value(e.after, m)
                if b is not None and a is not None:
                    pairs[e.task].append((b, a))
            if not pairs:
                continue

            def boot(pick: int, pairs: dict[str, list[tuple[float, float]]] = pairs) -> Interval:
                vals = {
                    t: [p[pick] if pick < 2 else p[1] - p[0] for p in v] for t, v in pairs.items()
                }
                return cluster_bootstrap(vals, seed=seed, num_resamples=num_resamples)

            flat = [p for v in pairs.values() for p in v]
            out.append(
                SummaryCorrection(
                    agent=label,
                    measure=m,
                    episodes=len(flat),
                    tasks=len(pairs),
                    passed_before=int(sum(b for b, _ in flat)),
                    passed_after=int(sum(a for _, a in flat)),
                    before=boot(0),
                    after=boot(1),
                    delta=boot(2),
                )
            )
    return tuple(out)
