"""The launcher class and its config (what Hydra's plugin discovery imports).

No `from __future__ import annotations` here: Hydra's plugin scan executes this module
before it is in `sys.modules`, where dataclasses cannot resolve string annotations.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class CavbenchRayLauncherConf:
    """`hydra.launcher` when `hydra/launcher=cavbench_ray` (or cavbench's `ray`)."""

    _target_: str = "hydra_plugins.cavbench_ray_launcher.ray_launcher.CavbenchRayLauncher"
    address: str | None = None
    """A running cluster (`HOST:PORT` or `auto`); None starts a new local one."""
    loopback_only: bool = True
    """A new local cluster listens on 127.0.0.1 only (Ray's single-machine mode), so nothing
    outside this machine can reach it. Set false to let other machines join it."""
    num_cpus: int | None = None
    """CPUs of a new local cluster (None: all of this machine's)."""
    include_dashboard: bool = False
    object_store_memory: int | None = None
    """Bytes of a new local cluster's object store (None: Ray's default)."""
    init: dict[str, Any] = field(default_factory=dict)
    """Any other `ray.init` keyword arguments."""
    remote: dict[str, Any] = field(default_factory=lambda: {"num_cpus": 1})
    """Options of each job's Ray task (`ray.remote(**remote)`)."""
    shutdown: bool = True
    """Shut down, at the end of the sweep, a cluster this launcher started."""


ConfigStore.instance().store(
    group="hydra/launcher", name="cavbench_ray", node=CavbenchRayLauncherConf, provider="cavbench"
)


class CavbenchRayLauncher(Launcher):
    """Runs each Hydra job of a multirun as one Ray task."""

    def __init__(
        self,
        address: str | None = None,
        loopback_only: bool = True,
        num_cpus: int | None = None,
        include_dashboard: bool = False,
        object_store_memory: int | None = None,
        init: dict[str, Any] | None = None,
        remote: dict[str, Any] | None = None,
        shutdown: bool = True,
    ) -> None:
        self.address = address
        self.loopback_only = loopback_only
        self.num_cpus = num_cpus
        self.include_dashboard = include_dashboard
        self.object_store_memory = object_store_memory
        self.init = dict(init or {})
        self.remote = dict(remote or {})
        self.shutdown = shutdown
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        from hydra_plugins.cavbench_ray_launcher import _core

        return _core.launch(self, job_overrides, initial_job_idx)
