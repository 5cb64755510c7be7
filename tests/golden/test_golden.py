"""Golden results, pinned as integer counts: the headline ablation on core-v1 and the
per-scenario verdicts of our packs (derived from the spec, see tests/golden/*.expected.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cavbench.adapters import BASELINE_PROFILES, Profile, baseline
from cavbench.evaluation import summarize
from cavbench.runner import Episode, replay, run_episodes, verdict_row
from cavbench.scenarios import Family, load_pack

HERE = Path(__file__).parent

# (n, OSR, PAOSR, CVSR) counts per profile over the 40 core-v1 scenarios.
HEADLINE = {
    Profile.DIRECT: (40, 37, 30, 10),
    Profile.POLICY_GATED: (40, 40, 40, 20),
    Profile.COMMIT_GUARDED: (40, 40, 40, 30),
    Profile.RECONCILED: (40, 40, 40, 35),
    Profile.FULL_LIFECYCLE: (40, 40, 40, 40),
}
ER, IA, HP, ST = (
    Family.EXECUTION_RECOVERY,
    Family.INTENT_AUTHORITY,
    Family.STABLE_HAPPY_PATH,
    Family.STATE_MUTATION,
)
# CVSR successes per family (of 10 each).
CVSR_BY_FAMILY = {
    Profile.DIRECT: {ER: 0, IA: 0, HP: 10, ST: 0},
    Profile.POLICY_GATED: {ER: 0, IA: 10, HP: 10, ST: 0},
    Profile.COMMIT_GUARDED: {ER: 0, IA: 10, HP: 10, ST: 10},
    Profile.RECONCILED: {ER: 5, IA: 10, HP: 10, ST: 10},
    Profile.FULL_LIFECYCLE: {ER: 10, IA: 10, HP: 10, ST: 10},
}


@pytest.fixture(scope="module")
def ablation() -> dict[Profile, list[Episode]]:
    pack = load_pack("core-v1")
    return {p: run_episodes(pack, baseline(p)) for p in BASELINE_PROFILES}


@pytest.mark.parametrize("profile", list(BASELINE_PROFILES))
def test_headline_counts(ablation: dict[Profile, list[Episode]], profile: Profile) -> None:
    c = summarize(e.verdict for e in ablation[profile]).overall
    assert (c.n, c.outcome, c.policy_aware, c.commit_valid) == HEADLINE[profile]


@pytest.mark.parametrize("profile", list(BASELINE_PROFILES))
def test_cvsr_by_family(ablation: dict[Profile, list[Episode]], profile: Profile) -> None:
    by_family = summarize(e.verdict for e in ablation[profile]).by_family
    assert {f: c.commit_valid for f, c in by_family.items()} == CVSR_BY_FAMILY[profile]
    assert all(c.n == 10 for c in by_family.values())


def test_direct_outcome_and_policy_by_family(ablation: dict[Profile, list[Episode]]) -> None:
    by_family = summarize(e.verdict for e in ablation[Profile.DIRECT]).by_family
    got = {f: (c.outcome, c.policy_aware) for f, c in by_family.items()}
    assert got == {ER: (10, 10), IA: (7, 0), HP: (10, 10), ST: (10, 10)}


def test_cvsr_never_decreases_across_tiers(ablation: dict[Profile, list[Episode]]) -> None:
    counts = [
        summarize(e.verdict for e in ablation[p]).overall.commit_valid for p in BASELINE_PROFILES
    ]
    assert counts == sorted(counts)


def _normalise(row: dict[str, object]) -> dict[str, str]:
    out = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in row.items()}
    out["failure_codes"] = ";".join(sorted(c for c in out["failure_codes"].split(";") if c))
    return out


@pytest.mark.parametrize("pack_id", ["core-v1", "mock", "netops-v1"])
def test_per_scenario_verdicts(pack_id: str) -> None:
    with open(HERE / f"{pack_id}.expected.csv", newline="") as fh:
        expected = {(r["scenario_id"], r["profile"]): _normalise(r) for r in csv.DictReader(fh)}
    pack = load_pack(pack_id)
    got = {
        (e.scenario.id, p.value): _normalise(verdict_row(e, p.value))
        for p in BASELINE_PROFILES
        for e in run_episodes(pack, baseline(p))
    }
    assert len(got) == len(pack) * len(BASELINE_PROFILES) == len(expected)
    mismatched = sorted(k for k in expected if expected[k] != got.get(k))
    assert mismatched == []


def test_replay_of_every_episode_gives_identical_verdicts(
    ablation: dict[Profile, list[Episode]],
) -> None:
    import json

    from cavbench.trace import EpisodeTrace

    differ = []
    for episodes in ablation.values():
        for e in episodes:
            reloaded = EpisodeTrace.from_json(json.loads(json.dumps(e.trace.as_json())))
            if replay(e.scenario, reloaded).as_json() != e.verdict.as_json():
                differ.append((e.adapter_name, e.scenario.id))
    assert differ == []
    assert sum(len(v) for v in ablation.values()) == 200
