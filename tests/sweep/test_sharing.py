"""Sweeps are safe to share and to resume: per-cell locks, failures recorded on a full disk,
validated sweep names, custom adapters whose code changes, provenance of the code that ran."""

from __future__ import annotations

import errno
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from omegaconf import DictConfig

from cavbench.errors import ConfigError
from cavbench.provenance import git_state
from cavbench.study import run_cell
from cavbench.study._sharing import LOCK_NAME
from cavbench.sweep import check_arguments
from cavbench.tables import TRACEBACK_NAME, CellStatus, Table, read_cell_manifest, read_table

Config = Callable[..., DictConfig]


def test_a_second_sweep_waits_for_the_cells_lock_then_skips_the_cell(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config("profile=direct")
    first = run_cell(cfg)
    cell = Path(first.directory)
    manifest_before = (cell / "manifest.json").read_bytes()
    held = FileLock(cell / LOCK_NAME)
    held.acquire()  # another sweep is writing this cell
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(run_cell(cfg)))
    with caplog.at_level(logging.WARNING):
        worker.start()
        time.sleep(0.5)
        assert worker.is_alive(), "the second job must wait for the lock"
        assert results == []
        held.release()
        worker.join(timeout=30)
    assert "another sweep is writing this cell" in caplog.text
    [second] = results
    assert second.skipped is True
    assert (cell / "manifest.json").read_bytes() == manifest_before


def test_a_full_disk_is_recorded_as_the_cells_error(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cavbench.study import _job

    def disk_full(*_args: object, **_kwargs: object) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_job, "open_table_writer", disk_full)
    cfg = config("profile=direct")
    with pytest.raises(OSError, match="No space left"):
        run_cell(cfg)
    cell = next((Path(str(cfg.output.root)) / "default").rglob("manifest.json")).parent
    manifest = read_cell_manifest(cell)
    assert manifest.status is CellStatus.FAILED
    assert manifest.error is not None
    assert "No space left on device" in manifest.error
    assert "No space left on device" in (cell / TRACEBACK_NAME).read_text(encoding="utf-8")
    assert not list(cell.glob("*.parquet"))
    assert not list(cell.glob("*.tmp-*"))


@pytest.mark.parametrize("name", ["../../x", "/tmp/abs", "a/b", "..", "", "a\\b"])
def test_output_name_must_be_one_folder_under_the_root(config: Config, name: str) -> None:
    with pytest.raises(ConfigError, match=r"output\.name"):
        run_cell(config("profile=direct", f"output.name='{name}'"))


def test_sweep_arguments_checked_before_hydra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "seeds.cout" in (check_arguments(["+seeds.cout=3"]) or "")
    assert "output.nme" in (check_arguments(["++output.nme=x"]) or "")
    assert check_arguments(["+factors.temperature=0.5", "+adapter.factory.delay=1"]) is None
    assert check_arguments(["seeds.count=3", "-m", "+experiment=smoke"]) is None
    from cavbench import sweep

    monkeypatch.setattr(sweep, "_importable", lambda name: False)  # as without the extras
    for launcher in ("slurm", "ray"):
        problem = check_arguments([f"hydra/launcher={launcher}"])
        assert problem == (
            f"hydra/launcher={launcher} needs the [{launcher}] extra, which is not installed "
            f"(fix: pip install 'cavbench[{launcher}]')"
        )
    assert check_arguments(["hydra/launcher=joblib"]) is None


@pytest.fixture
def adapter_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's adapter module on sys.path, with a factory that takes no profile."""
    module = tmp_path / "user_adapters_12.py"
    module.write_text(
        "from cavbench.adapters import baseline\n\n\n"
        "def make():\n    return baseline('reconciled')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield module
    sys.modules.pop("user_adapters_12", None)


CUSTOM = ("adapter.name=mine", "adapter.factory._target_=user_adapters_12.make")


def test_a_custom_adapter_without_profile_gets_none_and_no_profile_argument(
    config: Config, adapter_module: Path
) -> None:
    result = run_cell(config(*CUSTOM))
    assert result.status is CellStatus.COMPLETE
    assert "profile=none/adapter=mine/" in result.cell
    manifest = read_cell_manifest(Path(result.directory))
    assert manifest.profile == "none"
    assert manifest.adapter is not None
    assert manifest.adapter.source_module == "user_adapters_12"
    assert manifest.adapter.source_sha256 is not None
    episodes = read_table(Path(result.directory) / "episodes.parquet", Table.EPISODES)
    assert set(episodes.column("profile").to_pylist()) == {"none"}


def test_editing_a_custom_adapters_code_redoes_its_cells_loudly(
    config: Config, adapter_module: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert not run_cell(config(*CUSTOM)).skipped
    assert run_cell(config(*CUSTOM)).skipped
    adapter_module.write_text(
        adapter_module.read_text(encoding="utf-8") + "# a fix\n", encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING):
        again = run_cell(config(*CUSTOM))
    assert not again.skipped
    assert "adapter's code changed" in caplog.text
    assert "REDOING" in caplog.text


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repo(root: Path, project: str) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "pyproject.toml").write_text(f'[project]\nname = "{project}"\n', encoding="utf-8")
    package = root / "cavbench"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return package


def test_provenance_records_a_commit_only_for_a_cavbench_checkout(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "checkout", "cavbench")
    state = git_state(checkout)
    assert state is not None
    assert len(state.commit) == 40
    assert state.dirty is False
    (checkout / "__init__.py").write_text("# edited\n", encoding="utf-8")
    git_state.cache_clear()
    dirty = git_state(checkout)
    assert dirty is not None
    assert dirty.dirty is True
    # cavbench installed inside a user's own repository: that HEAD is not cavbench's.
    user = _repo(tmp_path / "user", "my-study")
    assert git_state(user) is None
    site = tmp_path / "user" / "venv" / "site-packages" / "cavbench"
    site.mkdir(parents=True)
    assert git_state(site) is None
    git_state.cache_clear()
