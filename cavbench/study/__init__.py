"""Study runs: the Hydra config schema of a sweep and the job that runs one cell of it.

`cavbench-sweep` is the entry point; this package holds what it is made of, so
tests and benchmarks can compose a config (`compose`) and run a cell (`run_cell`) in-process.
Importing it registers the config schema and the `${cavbench.cell:}` resolver.
"""

from collections.abc import Sequence

from hydra import compose as _hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig

from cavbench.study._cell import (
    CellKeys,
    cell_keys,
    config_hash,
    job_config,
    pack_id_of,
    register_resolver,
    seeds_label,
    subset_label,
)
from cavbench.study._config import (
    SCHEMA_NAME,
    AdapterConf,
    FamilyName,
    OutputConf,
    PreregConf,
    ProfileConf,
    ProfileName,
    RuleName,
    ScenariosConf,
    ScoringConf,
    SeedsConf,
    SweepConfig,
    config_dir,
    register_configs,
)
from cavbench.study._job import CellPlan, CellResult, run_cell, task
from cavbench.study._prereg import (
    DEVIATIONS_NAME,
    PACKS_NAME,
    PREREG_NAME,
    Deviation,
    DeviationKind,
    PlanRecord,
    Preregistration,
    PreregState,
    RegisteredPack,
    describe,
    experiment_design,
    read_preregistration,
    record_plan_deviation,
)

register_configs()
register_resolver()


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """The job config `cavbench-sweep OVERRIDES` would compose (one cell; sweep
    lists are not expanded), without Hydra's own node."""
    with initialize_config_dir(version_base="1.3", config_dir=str(config_dir()), job_name="sweep"):
        return _hydra_compose(config_name="config", overrides=list(overrides))


__all__ = [
    "DEVIATIONS_NAME",
    "PACKS_NAME",
    "PREREG_NAME",
    "SCHEMA_NAME",
    "AdapterConf",
    "CellKeys",
    "CellPlan",
    "CellResult",
    "Deviation",
    "DeviationKind",
    "FamilyName",
    "OutputConf",
    "PlanRecord",
    "PreregConf",
    "PreregState",
    "Preregistration",
    "RegisteredPack",
    "ProfileConf",
    "ProfileName",
    "RuleName",
    "ScenariosConf",
    "ScoringConf",
    "SeedsConf",
    "SweepConfig",
    "cell_keys",
    "compose",
    "config_dir",
    "config_hash",
    "describe",
    "experiment_design",
    "job_config",
    "pack_id_of",
    "read_preregistration",
    "record_plan_deviation",
    "register_configs",
    "register_resolver",
    "run_cell",
    "seeds_label",
    "subset_label",
    "task",
]
