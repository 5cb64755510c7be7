"""The structured-config schema of a sweep, registered in Hydra's `ConfigStore`.

`conf/config.yaml` puts `cavbench_schema` first in its defaults list, so every group file is
merged into these dataclasses: an unknown key, a wrong type or a value outside a vocabulary
fails when the config is composed, before any job starts, with OmegaConf naming the key.

The vocabularies below repeat the values of `Profile`, `Family` and `ScoringRule` with
lower-case member names, because OmegaConf matches an enum by member *name*; a test checks
that they stay equal to the originals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

import cavbench

SCHEMA_NAME = "cavbench_schema"


class ProfileName(StrEnum):
    """`profile.name`: one of the five baseline profiles (`cavbench.adapters.Profile`)."""

    direct = "direct"
    policy_gated = "policy_gated"
    commit_guarded = "commit_guarded"
    reconciled = "reconciled"
    full_lifecycle = "full_lifecycle"


class FamilyName(StrEnum):
    """`scenarios.families[]`: a scenario family (`cavbench.scenarios.Family`)."""

    stable_happy_path = "stable_happy_path"
    state_mutation = "state_mutation"
    intent_authority = "intent_authority"
    execution_recovery = "execution_recovery"


class RuleName(StrEnum):
    """`scoring.rule`: a named scoring rule (`cavbench.evaluation.ScoringRule`)."""

    v1 = "v1"
    v1_strict = "v1_strict"


@dataclass
class ProfileConf:
    """Group `profile/`: which baseline capability profile the cell runs."""

    name: ProfileName = MISSING


@dataclass
class AdapterConf:
    """Group `adapter/`: what acts in the episodes.

    `factory` is instantiated with `hydra.utils.instantiate`: `_target_` is the import path of
    a callable returning an `ExecutionAdapter`, the other keys its keyword arguments.
    """

    name: str = MISSING
    """The `adapter` partition key and column."""
    factory: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int = 1
    """Episodes of a cell run at once (threads; for I/O-bound adapters such as adapter=llm).
    Results do not depend on it, so it is not part of the config hash."""
    # `adapter=external` (an out-of-process candidate, cavbench.gateway.external):
    command: str | None = None
    """The candidate's command line, run once per episode."""
    transport: str = "rest"
    """`rest` or `mcp`: how the candidate reaches its gateway session."""
    time_limit_s: float = 60.0
    """Wall-clock limit of one candidate process (killed and recorded when it overruns)."""
    cwd: str | None = None
    """The candidate's working directory (default: the sweep's)."""


@dataclass
class ScenariosConf:
    """Group `scenarios/`: a pack and the subset of it the cell runs."""

    pack: str = "core-v1"
    """A built-in pack id or a directory holding `pack.json` and `scenarios/`."""
    families: list[FamilyName] = field(default_factory=list)
    """Keep only these families (empty: all)."""
    ids: list[str] = field(default_factory=list)
    """Keep only these scenario ids (empty: all)."""
    label: str | None = None
    """The `scenarios` partition value; derived from the filters when not set."""


@dataclass
class ScoringConf:
    """Group `scoring/`: the scoring rule of every verdict in the cell."""

    rule: RuleName = RuleName.v1


@dataclass
class SeedsConf:
    """Group `seeds/`: the seed block of a cell. Each scenario runs with seeds
    `start … start+count-1`, each seed `repetitions` times."""

    start: int = 0
    count: int = 1
    repetitions: int = 1


@dataclass
class PreregConf:
    """Pre-registration (see `docs/harness-factors.md`). Not part of a cell's identity."""

    analysis_plan: str | None = None
    """Path of the analysis plan; set, the first job registers it and the experiment config
    in `SWEEP_DIR/preregistration.json` before any episode runs."""
    deviation: str | None = None
    """Why the experiment config or plan changed since registration (appended to
    `SWEEP_DIR/deviations.jsonl`); without it such a change stops the job."""


@dataclass
class OutputConf:
    """Where and how a sweep writes. Not part of a cell's identity or config hash."""

    root: str = "sweeps"
    """Folder that holds sweeps (relative to the working directory, or absolute)."""
    name: str = "default"
    """The sweep's folder under `root`; the same name resumes the same sweep."""
    overwrite: bool = False
    """Redo complete cells, and accept a cell folder that holds a different config."""
    progress: bool = True
    """Show a progress bar (only ever on a terminal)."""


@dataclass
class SweepConfig:
    """The whole job config. One Hydra job = one cell = one value of every group."""

    profile: ProfileConf = field(default_factory=ProfileConf)
    adapter: AdapterConf = field(default_factory=AdapterConf)
    scenarios: ScenariosConf = field(default_factory=ScenariosConf)
    scoring: ScoringConf = field(default_factory=ScoringConf)
    seeds: SeedsConf = field(default_factory=SeedsConf)
    factors: dict[str, Any] = field(default_factory=dict)
    """Any other swept factor: name -> scalar. Each becomes a folder level and a column."""
    model: dict[str, Any] = field(default_factory=dict)
    """Group `model/`: the chat model of adapter=llm (empty for the profiles)."""
    output: OutputConf = field(default_factory=OutputConf)
    prereg: PreregConf = field(default_factory=PreregConf)


def register_configs() -> None:
    """Register the schema with Hydra's `ConfigStore` (idempotent)."""
    ConfigStore.instance().store(name=SCHEMA_NAME, node=SweepConfig)


def config_dir() -> Path:
    """The config tree: `cavbench/conf` in an installed wheel, `<repo>/conf` in a checkout."""
    package = Path(cavbench.__file__).resolve().parent
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise cavbench.CavBenchError(
        f"no sweep config tree found (looked in {package / 'conf'} and {package.parent / 'conf'}); "
        "reinstall cavbench"
    )
