"""A user's own config directory and adapter, from an installed wheel (not a checkout).

Builds the wheel, installs it into a fresh virtualenv (its dependencies borrowed from this
environment, so no network), and runs `cavbench-sweep` from a user's project folder that is
itself a git repository: `--config-dir` and `hydra.searchpath=[file://…]` add the user's
config groups, the user's adapter takes no profile, and provenance records no commit (the
user's HEAD is not cavbench's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

ADAPTER = """
from cavbench.adapters import baseline


class Mine:
    name = "mine"
    version = "0.1"

    def __init__(self, patience):
        self.patience = patience
        self.inner = baseline("reconciled")

    def run(self, session):
        return self.inner.run(session)


def make(patience=1):
    return Mine(patience)
"""


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = root.glob("cavbench-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # The dependencies come from this environment's site-packages (a plain path entry: its
    # own .pth files, such as the editable cavbench's, are not processed).
    (site / "zz_borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return venv


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project: a git repository with an `analysis/` folder of its own, an adapter
    module and a config directory."""
    root = tmp_path_factory.mktemp("project")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "analysis").mkdir()
    (root / "analysis" / "notes.md").write_text("the user's own analysis folder\n")
    (root / "my_adapters.py").write_text(ADAPTER)
    conf = root / "my_conf"
    (conf / "adapter").mkdir(parents=True)
    (conf / "adapter" / "mine.yaml").write_text(
        "name: mine\nfactory:\n  _target_: my_adapters.make\n  patience: 3\n"
    )
    (conf / "experiment").mkdir()
    (conf / "experiment" / "mine_vs_direct.yaml").write_text(
        "# @package _global_\n"
        "defaults:\n  - override /scenarios: state_mutation\n"
        "output:\n  name: mine\n"
        "hydra:\n  sweeper:\n    params:\n      adapter: mine,baseline\n"
    )
    return root


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(project)  # the user's adapter module
    return env


def test_the_wheel_ships_no_checkout_and_runs_from_anywhere(
    wheel_venv: Path, project: Path
) -> None:
    done = _run(
        [
            str(wheel_venv / "bin" / "python"),
            "-c",
            "import cavbench, cavbench.study as s; print(cavbench.__file__); print(s.config_dir())",
        ],
        project,
        _env(project),
    )
    assert done.returncode == 0, done.stderr
    assert str(REPO) not in done.stdout
    assert "site-packages/cavbench/conf" in done.stdout


@pytest.mark.parametrize("how", ["config-dir", "searchpath"])
def test_a_users_config_directory_adds_groups_and_experiments(
    wheel_venv: Path, project: Path, how: str
) -> None:
    conf = project / "my_conf"
    extra = (
        ["--config-dir", str(conf)]
        if how == "config-dir"
        else [f"hydra.searchpath=[file://{conf}]"]
    )
    root = project / f"sweeps-{how}"
    done = _run(
        [
            str(wheel_venv / "bin" / "cavbench-sweep"),
            "-m",
            *extra,
            "experiment=mine_vs_direct",
            f"output.root={root}",
            "output.progress=false",
        ],
        project,
        _env(project),
    )
    assert done.returncode == 0, done.stderr
    cells = sorted(
        p.parent.relative_to(root / "mine").as_posix() for p in root.rglob("manifest.json")
    )
    assert cells == [
        "profile=full_lifecycle/adapter=baseline/pack_id=core-v1/scenarios=state_mutation/scoring_rule=v1/seeds=0-0",
        "profile=none/adapter=mine/pack_id=core-v1/scenarios=state_mutation/scoring_rule=v1/seeds=0-0",
    ]
    mine = json.loads(next((root / "mine" / "profile=none").rglob("manifest.json")).read_text())
    assert mine["status"] == "COMPLETE"
    assert mine["config"]["adapter"]["factory"] == {"_target_": "my_adapters.make", "patience": 3}
    assert mine["adapter"]["source_module"] == "my_adapters"
    assert mine["provenance"]["git_commit"] is None  # the user's repository is not cavbench's
    assert mine["provenance"]["git_dirty"] is None
    analyzed = _run(
        [
            str(wheel_venv / "bin" / "cavbench"),
            "analyze",
            str(root / "mine"),
            "--out",
            str(project / f"out-{how}"),
            "--resamples",
            "200",
            "--figure-formats",
            "svg",
            "--quiet",
        ],
        project,
        _env(project),
    )
    assert analyzed.returncode == 0, analyzed.stderr
    assert "| mine" in analyzed.stdout
    assert "| full_lifecycle" in analyzed.stdout
    assert "mine - full_lifecycle" in analyzed.stdout or "full_lifecycle - mine" in analyzed.stdout
