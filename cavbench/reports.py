"""Run and ablation directories: JSON traces and evaluations a user can read and replay.

A run directory is written into a temporary sibling and renamed into place, so a reader
never sees half of one and a rerun leaves no stale files behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cavbench.errors import CavBenchError
from cavbench.evaluation import RateCounts, ScoringRule, summarize
from cavbench.provenance import environment_facts
from cavbench.redaction import current_redactor, redact_text
from cavbench.runner import Episode
from cavbench.scenarios import ScenarioPack
from cavbench.trace import EpisodeTrace

MANIFEST = "manifest.json"
TRACES = "traces.jsonl"
EVALUATIONS = "evaluations.jsonl"
SUMMARY = "summary.json"


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    pack: ScenarioPack
    adapter_name: str
    adapter_version: str
    seed: int
    rule: ScoringRule
    command: str


def _dump(data: Any) -> str:
    return redact_text(json.dumps(data, sort_keys=True, indent=2) + "\n")


def _line(record: Any) -> bytes:
    """One JSON line, secrets scrubbed. Key order is the records' own fixed order, so output
    is deterministic without sorting. orjson because encoding is most of the cost of
    writing a run."""
    line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    redactor = current_redactor()
    return redactor.text(line.decode("utf-8")).encode("utf-8") if redactor.active else line


def _replace_dir(tmp: Path, final: Path) -> None:
    if final.exists():
        trash = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, trash)
        os.replace(tmp, final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, final)


def manifest(info: RunInfo) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        **environment_facts(),
        "scenario_pack": {
            "id": info.pack.pack_id,
            "version": info.pack.pack_version,
            "digest": info.pack.digest,
            "source": str(info.pack.source),
        },
        "adapter": {"name": info.adapter_name, "version": info.adapter_version},
        "seed": info.seed,
        "scoring_rule": info.rule.value,
        "command": info.command,
    }


def write_run(root: Path, info: RunInfo, episodes: Sequence[Episode]) -> Path:
    """Write `<root>/<run_id>/` with manifest, traces, evaluations and summary."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / info.run_id
    tmp = Path(tempfile.mkdtemp(prefix=f".{info.run_id}.tmp-", dir=root))
    tmp.chmod(0o755)  # mkdtemp makes it private; a run directory is meant to be shared
    ordered = sorted(episodes, key=lambda e: e.scenario.id)
    with open(tmp / TRACES, "wb") as fh:
        fh.writelines(_line(e.trace.as_json()) for e in ordered)
    with open(tmp / EVALUATIONS, "wb") as fh:
        fh.writelines(_line(e.verdict.as_json()) for e in ordered)
    metrics = summarize(e.verdict for e in episodes)
    run_manifest = manifest(info)
    summary = {
        "run_id": info.run_id,
        "manifest": run_manifest,
        "metrics": {
            "overall": metrics.overall.as_json(),
            "by_family": {f.value: c.as_json() for f, c in metrics.by_family.items()},
        },
    }
    (tmp / SUMMARY).write_text(_dump(summary), encoding="utf-8")
    (tmp / MANIFEST).write_text(_dump(run_manifest), encoding="utf-8")
    _replace_dir(tmp, final)
    return final


def write_ablation_summary(root: Path, runs: Mapping[str, tuple[str, RateCounts]]) -> None:
    summary = {
        "study_type": "controlled architecture ablation",
        "important_limitation": "deterministic baseline strategies, not model performance",
        "profiles": {
            name: {"run_id": run_id, "metrics": counts.as_json()}
            for name, (run_id, counts) in runs.items()
        },
    }
    (root / SUMMARY).write_text(_dump(summary), encoding="utf-8")


def read_run(run_dir: Path) -> tuple[dict[str, Any], list[EpisodeTrace], list[dict[str, Any]]]:
    """Manifest, traces and recorded evaluations of a run directory."""
    for name in (MANIFEST, TRACES, EVALUATIONS):
        if not (run_dir / name).is_file():
            raise CavBenchError(
                f"{run_dir}: missing {name} (fix: point at a directory written by `cavbench run`)"
            )
    info = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    with open(run_dir / TRACES, encoding="utf-8") as fh:
        traces = [EpisodeTrace.from_json(json.loads(line)) for line in fh if line.strip()]
    with open(run_dir / EVALUATIONS, encoding="utf-8") as fh:
        evaluations = [json.loads(line) for line in fh if line.strip()]
    return info, traces, evaluations


def run_dirs(path: Path) -> list[Path]:
    """A run directory itself, or the run directories of an ablation directory."""
    if (path / MANIFEST).is_file():
        return [path]
    found = sorted(p.parent for p in path.glob(f"*/{MANIFEST}"))
    if not found:
        raise CavBenchError(
            f"{path}: neither a run directory nor an ablation directory (no {MANIFEST} found)"
        )
    return found
