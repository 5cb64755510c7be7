"""Fixtures for the pipeline tests: synthetic sweeps and frozen-artifact stand-ins in tmp dirs.

The stand-in has the ablation's exact headline counts and the table contract's schema; it is
written to temporary directories only, never under `artifacts/`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import SyntheticTables, ablation_standin


@pytest.fixture(scope="session")
def standin() -> SyntheticTables:
    """Synthetic tables with the core-v1 ablation counts."""
    return ablation_standin()


def write_artifacts(directory: Path, tables: SyntheticTables) -> Path:
    """Write a frozen-artifact folder (`episodes`, `verdicts`, `manifest.json`)."""
    directory.mkdir(parents=True, exist_ok=True)
    tables.episodes.write_parquet(directory / "episodes.parquet")
    tables.verdicts.write_parquet(directory / "verdicts.parquet")
    manifest = {"kind": "cavbench.sweep", "pack": {"id": "core-v1"}, "factors": []}
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return directory


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory: pytest.TempPathFactory, standin: SyntheticTables) -> Path:
    """A stand-in for `artifacts/ablation/` in a temporary directory."""
    return write_artifacts(tmp_path_factory.mktemp("artifacts") / "ablation", standin)


@pytest.fixture(scope="session")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep laid out as hive job folders, two seeds per profile."""
    tables = ablation_standin(seeds=(0, 1))
    root = tmp_path_factory.mktemp("sweep")
    for (profile, seed), part in tables.episodes.group_by(["profile", "seed"], maintain_order=True):
        folder = root / f"profile={profile}" / "adapter=baseline" / f"seeds={seed}-{seed}"
        folder.mkdir(parents=True)
        part.write_parquet(folder / "episodes.parquet")
        tables.verdicts.join(part.select("episode_id"), on="episode_id", how="semi").write_parquet(
            folder / "verdicts.parquet"
        )
        (folder / "manifest.json").write_text(
            json.dumps({"status": "COMPLETE", "factors": []}), encoding="utf-8"
        )
    return root


@pytest.fixture(scope="session")
def real_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (tiny) sweep: two profiles on the mock pack, manifests and checksums included."""
    from cavbench.study import compose, run_cell

    root = tmp_path_factory.mktemp("real")
    for profile in ("direct", "full_lifecycle"):
        run_cell(
            compose(
                [
                    "scenarios=mock",
                    "output.progress=false",
                    f"output.root={root}",
                    "output.name=s",
                    f"profile={profile}",
                    "seeds.count=2",
                ]
            )
        )
    return root / "s"
