"""Replay correction, the frozen records and the task-clustered bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.audit import AuditError, cluster_bootstrap, load_target, read_records
from cavbench.audit._replay import (
    Agent,
    per_task,
    record_episodes,
    replay_records,
    summarise,
    write_records,
)

FROZEN = Path(__file__).resolve().parents[2] / "artifacts" / "audit" / "retail-records"


@pytest.fixture(scope="module")
def corrected():  # type: ignore[no-untyped-def]
    records = read_records(FROZEN)
    return records, replay_records(records.records, load_target("retail").correct)


def test_frozen_records_verify_and_match_their_manifest(corrected) -> None:  # type: ignore[no-untyped-def]
    records, _ = corrected
    assert records.manifest["rows"] == len(records.records) == 315
    assert records.manifest["oracle_at_recording"] == "defective"
    assert records.target == "retail"


def test_frozen_records_regenerate_identically(tmp_path: Path) -> None:
    spec = load_target("retail")
    records = record_episodes(spec.natives[0].factory, target="retail", repetitions=3, seed=0)
    manifest = json.loads((FROZEN / "manifest.json").read_text())
    prov = {
        k: manifest[k]
        for k in manifest
        if k not in ("records_file", "rows", "schema_version", "sha256")
    }
    write_records(records, tmp_path, provenance=prov)
    assert (tmp_path / "episodes.jsonl").read_bytes() == (FROZEN / "episodes.jsonl").read_bytes()


def test_do_nothing_is_inflated_before_and_corrected_after(corrected) -> None:  # type: ignore[no-untyped-def]
    _, episodes = corrected
    summary = {(s.agent, s.measure): s for s in summarise(episodes, num_resamples=200)}
    nothing = summary[("do_nothing", "success")]
    assert (nothing.passed_before, nothing.passed_after, nothing.episodes) == (105, 0, 105)
    assert summary[("do_nothing", "component:db")].passed_after == 12  # question-only tasks
    assert (
        summary[("partial", "success")].passed_before,
        summary[("partial", "success")].passed_after,
    ) == (105, 33)
    assert (
        summary[("correct", "success")].passed_before,
        summary[("correct", "success")].passed_after,
    ) == (105, 105)
    overall = summary[("all", "success")]
    assert (overall.passed_before, overall.passed_after) == (315, 138)
    db = summary[("all", "component:db")]
    assert (db.passed_before, db.passed_after) == (315, 165)
    assert overall.delta.high < 0 < overall.before.low


def test_per_task_counts_add_up(corrected) -> None:  # type: ignore[no-untyped-def]
    _, episodes = corrected
    rows = [r for r in per_task(episodes) if r.measure == "success"]
    assert sum(r.episodes for r in rows) == 315
    assert sum(r.passed_after for r in rows if r.agent is Agent.DO_NOTHING) == 0


def test_tampered_records_are_refused(tmp_path: Path) -> None:
    for name in ("episodes.jsonl", "manifest.json"):
        (tmp_path / name).write_bytes((FROZEN / name).read_bytes())
    with (tmp_path / "episodes.jsonl").open("a") as handle:
        handle.write("\n")
    with pytest.raises(AuditError, match="SHA-256 does not match"):
        read_records(tmp_path)


def test_malformed_record_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record_id": "x"}\n')
    with pytest.raises(AuditError, match=r"bad.jsonl:1: not an episode record"):
        read_records(bad)


@settings(max_examples=40, deadline=None)
@given(
    values=st.dictionaries(
        st.text(min_size=1, max_size=3),
        st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=5),
        min_size=1,
        max_size=6,
    ),
    seed=st.integers(0, 2**16),
)
def test_bootstrap_is_seeded_and_brackets_the_estimate(values: dict, seed: int) -> None:
    a = cluster_bootstrap(values, seed=seed, num_resamples=100)
    assert a == cluster_bootstrap(values, seed=seed, num_resamples=100)
    assert 0.0 <= a.low <= a.estimate + 1e-12
    assert a.estimate - 1e-12 <= a.high <= 1.0
    assert a.clusters == len(values)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(AuditError, match="level"):
        cluster_bootstrap({"a": [1.0]}, seed=0, level=1.5)
    with pytest.raises(AuditError, match="at least one cluster"):
        cluster_bootstrap({}, seed=0)
