"""What makes a sweep folder safe to share and to move: the cell's lock, where the sweep
folder is, the pack copy kept inside it, and a failure record that survives a full disk.

Used by the job (`_job.py`); kept apart so that the job reads as the order of its writes.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

from cavbench.scenarios import ScenarioPack
from cavbench.study._cell import CellKeys
from cavbench.tables import TRACEBACK_NAME, CellManifest, CellStatus, Table, write_manifest
from cavbench.tables._io import TMP_MARKER, replace_atomically

LOCK_NAME = ".cell.lock"
PACKS_DIR = ".packs"
"""Folder of a sweep holding each pack it ran, by digest (so `recompute` needs no pack)."""

log = logging.getLogger(__name__)


@contextmanager
def cell_lock(cell_dir: Path, cell: str) -> Iterator[None]:
    """Hold the cell's lock (`filelock`): a second sweep writing the same cell waits, then
    finds it complete. Only the holder writes, or removes temporary files, in the folder."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(cell_dir / LOCK_NAME)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.warning("%s: another sweep is writing this cell; waiting for it", cell)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def sweep_dir(configured: Path, keys: CellKeys) -> Path:
    """The sweep's folder: Hydra's `hydra.sweep.dir` in a multirun (so an override moves the
    tables with Hydra's own files), the part of `hydra.run.dir` above the cell in a single
    run, else `output.root/output.name` (in-process runs, tests)."""
    if not HydraConfig.initialized():
        return configured
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        return Path(str(hydra_cfg.sweep.dir))
    run_dir = Path(str(hydra_cfg.run.dir))
    cell = Path(keys.path).parts
    if run_dir.parts[-len(cell) :] == cell:
        return Path(*run_dir.parts[: -len(cell)])
    return run_dir


def record_failure(directory: Path, manifest: CellManifest, text: str) -> None:
    """Record a failed job in its manifest and `traceback.txt`, even on a full disk: the
    partial tables are removed first, and each record is written whole or not at all."""
    remove_stale_tmp(directory)
    for table in Table:
        (directory / table.filename).unlink(missing_ok=True)
    failed = manifest.model_copy(update={"status": CellStatus.FAILED, "error": text})
    try:
        write_manifest(directory, failed)
    except OSError as exc:
        log.error("%s: cannot record the failure in the manifest (%s)", directory, exc)
    try:
        replace_atomically(directory / TRACEBACK_NAME, text.encode("utf-8"))
    except OSError as exc:
        (directory / TRACEBACK_NAME).unlink(missing_ok=True)
        log.error(
            "%s: cannot write %s (%s); the error was:\n%s", directory, TRACEBACK_NAME, exc, text
        )


def store_pack(pack: ScenarioPack, sweep_dir: Path) -> str:
    """Copy the pack's files into `sweep_dir/.packs/<digest>/` (once per digest) and return
    that folder relative to the sweep, so `recompute` can re-score anywhere."""
    relative = f"{PACKS_DIR}/{pack.digest.removeprefix('sha256:')}"
    target = sweep_dir / relative
    if (target / "pack.json").is_file():
        return relative
    (sweep_dir / PACKS_DIR).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=TMP_MARKER, dir=sweep_dir / PACKS_DIR))
    staging.chmod(0o755)  # mkdtemp makes it private; a sweep folder is meant to be shared
    (staging / "scenarios").mkdir()
    shutil.copy2(pack.source / "pack.json", staging / "pack.json")
    for file in sorted((pack.source / "scenarios").glob("*.json")):
        shutil.copy2(file, staging / "scenarios" / file.name)
    try:
        staging.rename(target)
    except OSError:  # another cell stored the same pack first
        shutil.rmtree(staging, ignore_errors=True)
    return relative


def remove_stale_tmp(directory: Path) -> None:
    for path in directory.glob(f"*{TMP_MARKER}*"):
        path.unlink(missing_ok=True)
