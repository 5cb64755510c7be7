"""What runs when a sweep is launched on Ray (imports Ray lazily)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

if TYPE_CHECKING:
    from hydra_plugins.cavbench_ray_launcher.ray_launcher import CavbenchRayLauncher

log = logging.getLogger(__name__)

INSTALL_HINT = 'the Ray launcher needs Ray: pip install "cavbench[ray]"'
_SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _run_job(
    hydra_context: HydraContext,
    sweep_config: DictConfig,
    task_function: TaskFunction,
    singleton_state: dict[Any, Any],
) -> JobReturn:
    """Body of one Ray task: restore Hydra's global state, then run the job as Hydra does."""
    setup_globals()
    Singleton.set_state(singleton_state)
    HydraConfig.instance().set_config(sweep_config)
    return run_job(
        hydra_context=hydra_context,
        task_function=task_function,
        config=sweep_config,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )


def _single_machine_mode() -> None:
    """Make a new local cluster bind to 127.0.0.1 only.

    Ray binds its servers to the machine's network address unless it runs in the mode it
    uses on macOS and Windows, where everything stays on the loopback interface. The switch
    is read when Ray is imported, and Ray's own processes inherit it from the environment.
    """
    if "ray" in sys.modules:
        from ray._private import ray_constants

        if ray_constants.ENABLE_RAY_CLUSTER:
            log.warning(
                "Ray was imported before the launcher ran, so the local cluster will listen on "
                "this machine's network address; set %s=0 before starting Python to keep it "
                "on 127.0.0.1",
                _SINGLE_MACHINE_ENV,
            )
        return
    os.environ.setdefault(_SINGLE_MACHINE_ENV, "0")


def _init_kwargs(launcher: CavbenchRayLauncher) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "address": launcher.address or "local",
        "include_dashboard": launcher.include_dashboard,
    }
    if launcher.address is None:  # a new local cluster: its size is ours to choose
        if launcher.num_cpus is not None:
            kwargs["num_cpus"] = launcher.num_cpus
        if launcher.object_store_memory is not None:
            kwargs["object_store_memory"] = launcher.object_store_memory
    kwargs.update(launcher.init)
    return kwargs


def launch(
    launcher: CavbenchRayLauncher, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
) -> Sequence[JobReturn]:
    """Submit every job as a Ray task, wait for all, return their `JobReturn`s in order."""
    if launcher.address is None and launcher.loopback_only:
        _single_machine_mode()
    try:
        import ray
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    config, context, task = launcher.config, launcher.hydra_context, launcher.task_function
    if config is None or context is None or task is None:
        raise RuntimeError("CavbenchRayLauncher.launch called before setup")
    setup_globals()
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    started = False
    if not ray.is_initialized():
        kwargs = _init_kwargs(launcher)
        log.info("starting Ray: %s", kwargs)
        ray.init(**kwargs)
        started = True
    try:
        remote = (
            ray.remote(**launcher.remote)(_run_job) if launcher.remote else ray.remote(_run_job)
        )
        log.info("Ray launcher: %d jobs, sweep folder %s", len(job_overrides), sweep_dir)
        pending = []
        state = Singleton.get_state()
        for offset, overrides in enumerate(job_overrides):
            idx = initial_job_idx + offset
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            sweep_config = context.config_loader.load_sweep_config(config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"ray_{idx}"
                sweep_config.hydra.job.num = idx
            pending.append(remote.remote(context, sweep_config, task, state))
        results: list[JobReturn] = ray.get(pending)
        return results
    finally:
        if started and launcher.shutdown:
            ray.shutdown()
