"""The config tree composes, and a typo or a wrong type fails at composition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.errors import ConfigCompositionException, MissingConfigException
from hypothesis import given
from hypothesis import strategies as st
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from cavbench.adapters import Profile
from cavbench.errors import ConfigError
from cavbench.evaluation import ScoringRule
from cavbench.scenarios import Family
from cavbench.study import (
    FamilyName,
    ProfileName,
    RuleName,
    SweepConfig,
    cell_keys,
    compose,
    config_dir,
    config_hash,
    job_config,
    seeds_label,
    subset_label,
)

CONF = config_dir()


def test_config_tree_is_the_repos_conf_folder() -> None:
    assert (CONF / "config.yaml").is_file()
    assert CONF.name == "conf"


def test_default_config_is_one_cell_of_core_v1() -> None:
    cfg = compose()
    assert cell_keys(cfg).path == (
        "profile=full_lifecycle/adapter=baseline/pack_id=core-v1/scenarios=all/"
        "scoring_rule=v1/seeds=0-0"
    )


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes(name: str) -> None:
    cfg = compose([f"experiment={name}"])
    assert cfg.output.name == name


@pytest.mark.parametrize("group", ["profile", "scenarios", "scoring", "seeds", "adapter"])
def test_every_group_option_composes_to_its_own_cell(group: str) -> None:
    options = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
    assert options
    paths = {cell_keys(compose([f"{group}={option}"])).path for option in options}
    assert len(paths) == len(options)


def test_vocabularies_equal_the_core_enums() -> None:
    assert [p.value for p in ProfileName] == [p.value for p in Profile]
    assert {f.value for f in FamilyName} == {f.value for f in Family}
    assert {r.value for r in RuleName} == {r.value for r in ScoringRule}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("scenarios.familes=[state_mutation]", "scenarios.familes"),
        ("seeds.count=abc", "seeds.count"),
        ("scenarios.families=[state_mutaton]", "scenarios.families"),
        ("scoring.rule=v2", "scoring.rule"),
    ],
)
def test_a_typo_or_wrong_type_fails_at_composition(override: str, message: str) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose([override])
    chain = f"{info.value} {info.value.__cause__}"
    assert message in chain


def test_an_unknown_group_option_lists_the_choices() -> None:
    with pytest.raises(MissingConfigException, match="direct"):
        compose(["profile=drect"])


def test_a_typo_inside_a_config_file_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "typo.yaml").write_text(
        "# @package _global_\nseeds:\n  cout: 3\n", encoding="utf-8"
    )
    with pytest.raises(ConfigCompositionException) as info:
        compose(["experiment=typo", f"hydra.searchpath=[file://{tmp_path}]"])
    assert "cout" in f"{info.value} {info.value.__cause__}"


def test_the_schema_rejects_unknown_keys_and_bad_values() -> None:
    schema = OmegaConf.structured(SweepConfig)
    with pytest.raises(ConfigKeyError):
        OmegaConf.merge(schema, {"output": {"nmae": "x"}})
    with pytest.raises(ValidationError):
        OmegaConf.merge(schema, {"profile": {"name": "nobody"}})


def test_ablation_sweeps_the_five_profiles_over_core_v1() -> None:
    cfg = compose(["experiment=ablation"])
    assert cell_keys(cfg).path.endswith("pack_id=core-v1/scenarios=all/scoring_rule=v1/seeds=0-0")
    raw = OmegaConf.load(CONF / "experiment" / "ablation.yaml")
    assert raw.hydra.sweeper.params.profile.split(",") == [p.value for p in Profile]


def test_cell_path_is_named_from_config_values_only() -> None:
    cfg = compose(
        [
            "profile=direct",
            "scenarios.families=[state_mutation]",
            "seeds.start=5",
            "seeds.count=3",
            "seeds.repetitions=2",
            "+factors.temperature=0.7",
        ]
    )
    keys = cell_keys(cfg)
    assert keys.path == (
        "profile=direct/adapter=baseline/pack_id=core-v1/scenarios=state_mutation/"
        "scoring_rule=v1/seeds=5-7x2/temperature=0.7"
    )
    assert keys.factors == ("temperature",)
    assert keys.episode_id("ST-01", 5, 1) == keys.episode_id("ST-01", 5, 1)
    assert keys.episode_id("ST-01", 5, 1) != keys.episode_id("ST-01", 5, 0)


def test_factor_names_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"factors\.Bad"):
        cell_keys(compose(["+factors.Bad=1"]))
    with pytest.raises(ConfigError, match=r"factors\.profile"):
        cell_keys(compose(["+factors.profile=1"]))
    with pytest.raises(ConfigError, match="scalar"):
        cell_keys(compose(["+factors.grid=[1,2]"]))


def test_config_hash_ignores_output_and_follows_everything_else() -> None:
    base = job_config(compose())
    assert config_hash(base) == config_hash(job_config(compose(["output.name=other"])))
    assert config_hash(base) != config_hash(job_config(compose(["seeds.count=2"])))
    assert "output" not in base


@given(
    families=st.lists(st.sampled_from([f.value for f in Family]), unique=True),
    ids=st.lists(st.from_regex(r"[A-Z]{2}-[0-9]{2}", fullmatch=True), unique=True, max_size=6),
)
def test_subset_labels_are_deterministic_and_path_safe(families: list[str], ids: list[str]) -> None:
    label = subset_label(families, ids, None)
    assert label == subset_label(list(families), list(ids), None)
    assert "/" not in label
    assert "=" not in label
    assert label
    assert (label == "all") == (not families and not ids)


@given(st.integers(0, 10_000), st.integers(1, 1000), st.integers(1, 50))
def test_seed_labels_name_the_block(start: int, count: int, reps: int) -> None:
    label = seeds_label(start, count, reps)
    first, _, rest = label.partition("-")
    assert int(first) == start
    assert int(rest.split("x")[0]) == start + count - 1
    assert ("x" in label) == (reps > 1)


def test_config_fixture_points_output_at_tmp(
    config: Callable[..., DictConfig], tmp_path: Path
) -> None:
    cfg = config()
    assert cfg.output.root == str(tmp_path / "sweeps")
    assert cfg.scenarios.pack == "mock"


@pytest.mark.parametrize(
    ("choice", "target"),
    [
        ("joblib", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
        ("slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
        ("ray", "hydra_plugins.cavbench_ray_launcher.ray_launcher.CavbenchRayLauncher"),
    ],
)
def test_launcher_choices_compose(choice: str, target: str) -> None:
    if choice == "slurm":  # the README's test command runs with `.[dev]` only
        pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="needs cavbench[slurm]")
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF), job_name="sweep"):
        cfg = hydra_compose(
            config_name="config", overrides=[f"hydra/launcher={choice}"], return_hydra_config=True
        )
    assert cfg.hydra.launcher._target_ == target
    assert cfg.hydra.job.chdir is False
    if choice == "ray":
        assert cfg.hydra.launcher.include_dashboard is False
        assert cfg.hydra.launcher.loopback_only is True
