"""Golden results of the second domain, netops-v1, pinned as integer counts.

The per-scenario verdict rows are pinned in tests/golden/netops-v1.expected.csv (checked by
test_golden.test_per_scenario_verdicts); here: the headline counts, the per-family CVSR and
the validity-gap ladder across the five profiles, which mirrors core-v1's.
"""

from __future__ import annotations

import pytest

from cavbench.adapters import BASELINE_PROFILES, Profile, baseline
from cavbench.evaluation import summarize
from cavbench.runner import Episode, run_episodes
from cavbench.scenarios import Family, load_pack

# (n, OSR, PAOSR, CVSR) counts per profile over the 32 netops-v1 scenarios.
HEADLINE = {
    Profile.DIRECT: (32, 29, 24, 8),
    Profile.POLICY_GATED: (32, 32, 32, 16),
    Profile.COMMIT_GUARDED: (32, 32, 32, 24),
    Profile.RECONCILED: (32, 32, 32, 28),
    Profile.FULL_LIFECYCLE: (32, 32, 32, 32),
}
ER, IA, HP, ST = (
    Family.EXECUTION_RECOVERY,
    Family.INTENT_AUTHORITY,
    Family.STABLE_HAPPY_PATH,
    Family.STATE_MUTATION,
)
# CVSR successes per family (of 8 each).
CVSR_BY_FAMILY = {
    Profile.DIRECT: {ER: 0, IA: 0, HP: 8, ST: 0},
    Profile.POLICY_GATED: {ER: 0, IA: 8, HP: 8, ST: 0},
    Profile.COMMIT_GUARDED: {ER: 0, IA: 8, HP: 8, ST: 8},
    Profile.RECONCILED: {ER: 4, IA: 8, HP: 8, ST: 8},
    Profile.FULL_LIFECYCLE: {ER: 8, IA: 8, HP: 8, ST: 8},
}


@pytest.fixture(scope="module")
def ablation() -> dict[Profile, list[Episode]]:
    pack = load_pack("netops-v1")
    return {p: run_episodes(pack, baseline(p)) for p in BASELINE_PROFILES}


def test_pack_is_a_second_domain_of_at_least_twenty_scenarios() -> None:
    net, core = load_pack("netops-v1"), load_pack("core-v1")
    assert len(net) == 32
    assert not set(net.ids) & set(core.ids)

    def namespaces(pack: object) -> set[str]:
        return {ns for s in pack.scenarios for ns in s.world.initial_state}  # type: ignore[attr-defined]

    assert not namespaces(net) & namespaces(core), "different resources from core-v1"


@pytest.mark.parametrize("profile", list(BASELINE_PROFILES))
def test_headline_counts(ablation: dict[Profile, list[Episode]], profile: Profile) -> None:
    c = summarize(e.verdict for e in ablation[profile]).overall
    assert (c.n, c.outcome, c.policy_aware, c.commit_valid) == HEADLINE[profile]


@pytest.mark.parametrize("profile", list(BASELINE_PROFILES))
def test_cvsr_by_family(ablation: dict[Profile, list[Episode]], profile: Profile) -> None:
    by_family = summarize(e.verdict for e in ablation[profile]).by_family
    assert {f: c.commit_valid for f, c in by_family.items()} == CVSR_BY_FAMILY[profile]
    assert all(c.n == 8 for c in by_family.values())


def test_validity_gap_ladder_is_strict(ablation: dict[Profile, list[Episode]]) -> None:
    cvsr = [
        summarize(e.verdict for e in ablation[p]).overall.commit_valid for p in BASELINE_PROFILES
    ]
    assert cvsr == sorted(set(cvsr)), "each capability adds commit-valid successes"
    gaps = []
    for p in BASELINE_PROFILES:
        c = summarize(e.verdict for e in ablation[p]).overall
        gaps.append(c.outcome - c.commit_valid)
    assert gaps == [21, 16, 8, 4, 0]
