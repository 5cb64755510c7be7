"""Two jobs on a local Ray cluster (127.0.0.1) through cavbench's Ray launcher plugin.

Needs the `[ray]` extra; `.ci/ray-step.sh` installs it and runs this. Ray is pointed at a
private temporary folder and given its auth token in the environment, so it writes nothing
into the home folder (Ray 2.60 saves a generated token in ~/.ray otherwise).
"""

from __future__ import annotations

import importlib.util
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cavbench.tables import CellStatus, cell_dirs, read_cell_manifest

from .conftest import run_sweep

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason='needs Ray: pip install "cavbench[ray]"'
    ),
]


def _snapshot(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append(args[:120])
    return found


@pytest.fixture
def ray_dir() -> Iterator[Path]:
    # Short on purpose: Ray's socket paths live under it and must stay under ~100 characters.
    path = Path(tempfile.mkdtemp(prefix="cbray-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_two_jobs_on_a_local_ray_cluster(tmp_path: Path, ray_dir: Path) -> None:
    real_ray_home = Path.home() / ".ray"
    before = _snapshot(real_ray_home)
    home = ray_dir / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "RAY_TMPDIR": str(ray_dir),
        "TMPDIR": str(ray_dir),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    done = run_sweep(
        [
            "-m",
            "experiment=smoke",
            "hydra/launcher=ray",
            "hydra.launcher.num_cpus=2",
            "hydra.launcher.object_store_memory=100000000",
        ],
        tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cells = cell_dirs(tmp_path / "sweeps" / "smoke")
    assert len(cells) == 2
    for directory in cells:
        manifest = read_cell_manifest(directory)
        assert manifest.status is CellStatus.COMPLETE
        assert manifest.n_episodes == 5
    assert "'include_dashboard': False" in done.stdout + done.stderr
    assert list(home.iterdir()) == [], "Ray left files in the home folder"
    assert _snapshot(real_ray_home) == before
    assert _processes_mentioning(str(ray_dir)) == [], "Ray processes outlived the sweep"
