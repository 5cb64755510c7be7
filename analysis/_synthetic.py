"""Synthetic episode tables: a stand-in with the ablation's headline counts, and simulations.

These are not results. The stand-in reproduces the published core-v1 ablation counts
(SPEC d.6) with the sweep's table schema, so the whole analysis chain can be tested and
demonstrated without running an adapter; the simulator draws episodes from known per-task
success probabilities for the interval calibration check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis._vocab import CANONICAL_PROFILES, DIMENSIONS, VerdictStatus

FAMILIES: Mapping[str, str] = {
    "ER": "execution_recovery",
    "IA": "intent_authority",
    "HP": "stable_happy_path",
    "ST": "state_mutation",
}
"""Family code used in scenario ids -> family name."""

GOLDEN_ABLATION_COUNTS: Mapping[str, tuple[int, int, int]] = {
    "direct": (37, 30, 10),
    "policy_gated": (40, 40, 20),
    "commit_guarded": (40, 40, 30),
    "reconciled": (40, 40, 35),
    "full_lifecycle": (40, 40, 40),
}
"""Per profile (OSR, PAOSR, CVSR) success counts out of n = 40 on core-v1."""

EPISODE_SCHEMA: Mapping[str, pl.DataType] = {
    "episode_id": pl.String(),
    "scenario_id": pl.String(),
    "family": pl.String(),
    "profile": pl.String(),
    "adapter": pl.String(),
    "pack_id": pl.String(),
    "seed": pl.Int64(),
    "repetition": pl.Int64(),
    "scoring_rule": pl.String(),
    "outcome_success": pl.Boolean(),
    "policy_aware_outcome_success": pl.Boolean(),
    "commit_valid_success": pl.Boolean(),
    "reported_status": pl.String(),
    "commit_count": pl.Int64(),
    "failure_codes": pl.List(pl.String()),
    "error": pl.String(),
}
"""Column types of the `episodes` table contract."""

VERDICT_SCHEMA: Mapping[str, pl.DataType] = {
    "episode_id": pl.String(),
    "scenario_id": pl.String(),
    "profile": pl.String(),
    "dimension": pl.String(),
    "status": pl.String(),
}
"""Column types of the `verdicts` table contract."""

# Which dimension and failure code a commit-invalid episode of each family fails.
_FAMILY_FAILURE: Mapping[str, tuple[str, str]] = {
    "ER": ("outcome_recoverability", "OR_COMPENSATION_MISSING"),
    "IA": ("authority_validity", "AV_PRINCIPAL_NOT_AUTHORIZED"),
    "HP": ("execution_integrity", "EI_DUPLICATE_LOGICAL_EFFECT"),
    "ST": ("temporal_state_validity", "TS_STALE_WITNESS"),
}
_FAMILY_FOCUS: Mapping[str, tuple[str, ...]] = {
    "ER": ("execution_integrity", "outcome_recoverability"),
    "IA": ("intent_grounding", "authority_validity"),
    "HP": ("execution_integrity",),
    "ST": ("temporal_state_validity", "execution_integrity"),
}


@dataclass(frozen=True)
class SyntheticTables:
    """An `episodes` and a `verdicts` frame with the sweep's table contract."""

    episodes: pl.DataFrame
    verdicts: pl.DataFrame


def _ablation_flags(profile: str, code: str, index: int) -> tuple[bool, bool, bool]:
    """Per-scenario (outcome, policy-aware, commit-valid) reproducing the golden counts."""
    if profile == "direct":
        if code == "IA":
            return index > 3, False, False
        return True, True, code == "HP"
    cvsr_families = {
        "policy_gated": {"IA", "HP"},
        "commit_guarded": {"IA", "HP", "ST"},
        "reconciled": {"IA", "HP", "ST"},
        "full_lifecycle": {"IA", "HP", "ST", "ER"},
    }[profile]
    valid = code in cvsr_families or (profile == "reconciled" and code == "ER" and index <= 5)
    return True, True, valid


def ablation_standin(repetitions: int = 1, seeds: Sequence[int] = (0,)) -> SyntheticTables:
    """Synthetic tables with exactly the core-v1 ablation counts (40 scenarios x 5 profiles).

    Every (seed, repetition) repeats the same deterministic outcomes, as the baselines do.

    >>> tables = ablation_standin()
    >>> tables.episodes.height, tables.verdicts.height
    (200, 1000)
    >>> cvsr = tables.episodes.group_by("profile").agg(pl.col("commit_valid_success").sum())
    >>> dict(cvsr.rows()) == {p: c for p, (_, _, c) in GOLDEN_ABLATION_COUNTS.items()}
    True
    """
    episodes: list[dict[str, object]] = []
    verdicts: list[dict[str, object]] = []
    for profile in CANONICAL_PROFILES:
        for code, family in FAMILIES.items():
            for index in range(1, 11):
                scenario = f"{code}-{index:02d}"
                osr, paosr, cvsr = _ablation_flags(profile, code, index)
                failed_dimension, failure_code = _FAMILY_FAILURE[code]
                codes = [] if cvsr else [failure_code]
                if not paosr and code == "IA":
                    codes = ["IG_SCOPE_WIDENING", failure_code]
                for seed in seeds:
                    for repetition in range(repetitions):
                        episode_id = f"{profile}/{scenario}/s{seed}/r{repetition}"
                        episodes.append(
                            {
                                "episode_id": episode_id,
                                "scenario_id": scenario,
                                "family": family,
                                "profile": profile,
                                "adapter": f"baseline-{profile}",
                                "pack_id": "core-v1",
                                "seed": seed,
                                "repetition": repetition,
                                "scoring_rule": "v1",
                                "outcome_success": osr,
                                "policy_aware_outcome_success": paosr,
                                "commit_valid_success": cvsr,
                                "reported_status": "completed" if osr else "failed",
                                "commit_count": 1 if osr else 0,
                                "failure_codes": codes,
                                "error": None,
                            }
                        )
                        for dimension in DIMENSIONS:
                            if not cvsr and dimension == failed_dimension:
                                status = VerdictStatus.FAIL
                            elif dimension in _FAMILY_FOCUS[code]:
                                status = VerdictStatus.PASS
                            else:
                                status = VerdictStatus.NOT_APPLICABLE
                            verdicts.append(
                                {
                                    "episode_id": episode_id,
                                    "scenario_id": scenario,
                                    "profile": profile,
                                    "dimension": dimension,
                                    "status": str(status),
                                }
                            )
    return SyntheticTables(
        episodes=pl.DataFrame(episodes, schema=dict(EPISODE_SCHEMA)),
        verdicts=pl.DataFrame(verdicts, schema=dict(VERDICT_SCHEMA)),
    )


def simulate_episodes(
    probabilities: Mapping[str, Sequence[float]],
    repetitions: int,
    seed: int,
    families: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Episodes drawn from known per-task success probabilities, one profile per mapping key.

    All three success flags equal the drawn success (the simulation is about the interval,
    not about the gaps). Task ``t`` of every profile is the same scenario, so profiles pair.

    >>> frame = simulate_episodes({"a": [0.0, 1.0], "b": [1.0, 1.0]}, repetitions=3, seed=0)
    >>> frame.group_by("profile").agg(pl.col("commit_valid_success").sum()).sort("profile").rows()
    [('a', 3), ('b', 6)]
    """
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for profile, probs in probabilities.items():
        draws = rng.random((len(probs), repetitions)) < np.asarray(probs, dtype=float)[:, None]
        for t in range(len(probs)):
            family = families[t] if families is not None else "synthetic"
            for r in range(repetitions):
                ok = bool(draws[t, r])
                rows.append(
                    {
                        "episode_id": f"{profile}/task-{t:05d}/r{r}",
                        "scenario_id": f"task-{t:05d}",
                        "family": family,
                        "profile": profile,
                        "adapter": profile,
                        "pack_id": "synthetic",
                        "seed": seed,
                        "repetition": r,
                        "scoring_rule": "v1",
                        "outcome_success": ok,
                        "policy_aware_outcome_success": ok,
                        "commit_valid_success": ok,
                        "reported_status": "completed",
                        "commit_count": 1,
                        "failure_codes": [] if ok else ["SIMULATED_FAILURE"],
                        "error": None,
                    }
                )
    return pl.DataFrame(rows, schema=dict(EPISODE_SCHEMA))
