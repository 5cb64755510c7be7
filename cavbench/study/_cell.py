"""A composed config seen as one cell: its partition keys, folder, config hash and episodes.

The folder of a cell is a hive path built from config values only
(`profile=…/adapter=…/pack_id=…/scenarios=…/scoring_rule=…/seeds=…[/factor=…]`), never from
job numbers or the clock, so the same command finds the same folders again (that is how an
interrupted sweep resumes). `cell_path` is also registered as the OmegaConf resolver
`${cavbench.cell:}`, which `conf/config.yaml` uses for Hydra's run and sweep sub-directory.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hydra.utils import get_object
from omegaconf import DictConfig, OmegaConf

from cavbench.errors import ConfigError
from cavbench.scenarios import builtin_pack_ids
from cavbench.tables import PARTITION_KEYS, RESERVED_NAMES

RESOLVER = "cavbench.cell"
NAME_RESOLVER = "cavbench.sweep_name"
_SAFE = "-_.+,~@"
_FACTOR_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_MAX_LISTED_IDS = 3


def _scalar_text(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    if value is None:
        return "null"
    raise ConfigError(
        f"{where}: a swept factor must be a scalar (string, number or boolean), got {value!r}"
    )


@cache
def _hive_path(items: tuple[tuple[str, str], ...]) -> str:
    return "/".join(f"{key}={quote(value, safe=_SAFE)}" for key, value in items)


@cache
def _path_digest(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def pack_id_of(ref: str) -> str:
    """The pack id a `scenarios.pack` value names, read cheaply (no validation)."""
    if ref in builtin_pack_ids():
        return ref
    manifest = Path(ref) / "pack.json"
    try:
        pack_id = json.loads(manifest.read_text(encoding="utf-8")).get("pack_id")
    except (OSError, ValueError, AttributeError):
        pack_id = None
    return str(pack_id) if isinstance(pack_id, str) and pack_id else Path(ref).name


def subset_label(families: Sequence[str], ids: Sequence[str], label: str | None) -> str:
    """The `scenarios` partition value: the configured label, else one derived from the
    filters (`all`, the families joined by `+`, a few ids joined by `+`, or `ids-<hash>`)."""
    if label:
        return label
    parts: list[str] = []
    if families:
        parts.append("+".join(sorted(families)))
    if ids:
        if len(ids) <= _MAX_LISTED_IDS:
            parts.append("+".join(ids))
        else:
            parts.append("ids-" + _short_hash(",".join(ids)))
    return "+".join(parts) if parts else "all"


def seeds_label(start: int, count: int, repetitions: int) -> str:
    """The `seeds` partition value: `first-last`, with `xR` when repeated R > 1 times."""
    label = f"{start}-{start + count - 1}"
    return f"{label}x{repetitions}" if repetitions > 1 else label


@dataclass(frozen=True, slots=True)
class CellKeys:
    """The partition keys of one cell, in folder order."""

    items: tuple[tuple[str, str], ...]
    factors: tuple[str, ...]

    @property
    def path(self) -> str:
        """The cell's folder, relative to the sweep folder."""
        return _hive_path(self.items)

    def as_dict(self) -> dict[str, str]:
        return dict(self.items)

    @property
    def digest(self) -> str:
        """sha256 of the cell's folder path (hex)."""
        return _path_digest(self.path)

    def episode_id(self, scenario_id: str, seed: int, repetition: int) -> str:
        """Deterministic and unique within a sweep: the cell's digest, scenario, seed, rep."""
        return f"{self.digest[:12]}:{scenario_id}:s{seed}:r{repetition}"


def _enum_text(value: Any) -> str:
    return str(getattr(value, "value", value))


NO_PROFILE = "none"
"""The `profile` key of a cell whose adapter takes no profile (a custom adapter)."""


@cache
def _factory_takes_profile(target: str) -> bool:
    """Whether the callable at `target` accepts a `profile` argument (the baseline engine
    does; a custom adapter's factory usually does not). True when it cannot be imported
    here: building the adapter reports that error properly."""
    try:
        factory = get_object(target)
        parameters = inspect.signature(factory).parameters
    except Exception:
        return True
    return "profile" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def takes_profile(factory: Mapping[str, Any]) -> bool:
    """Whether an `adapter.factory` config uses the `profile` group (see `NO_PROFILE`)."""
    if "profile" in factory:
        return True
    target = factory.get("_target_")
    return not isinstance(target, str) or _factory_takes_profile(target)


_NAME_FORBIDDEN = re.compile(r"[/\\\x00]")


def check_sweep_name(name: str) -> str:
    """`output.name` as given, if it names one folder directly under `output.root`."""
    if not name or name in (".", "..") or _NAME_FORBIDDEN.search(name) or name != name.strip():
        raise ConfigError(
            f"output.name={name!r}: the sweep's name must be one folder name under output.root "
            "(no '/', '\\', '..', no absolute path, no surrounding spaces) (fix: e.g. "
            "output.name=my_study; to write elsewhere set output.root or hydra.sweep.dir)"
        )
    return name


def cell_keys(cfg: DictConfig | Mapping[str, Any]) -> CellKeys:
    """The cell a composed config describes."""
    node = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
    scenarios = node.scenarios
    seeds = node.seeds
    factory = node.adapter.get("factory") or {}
    uses_profile = takes_profile({str(k): factory[k] for k in factory})
    values = {
        "profile": _enum_text(node.profile.name) if uses_profile else NO_PROFILE,
        "adapter": str(node.adapter.name),
        "pack_id": pack_id_of(str(scenarios.pack)),
        "scenarios": subset_label(
            [_enum_text(f) for f in scenarios.families],
            [str(i) for i in scenarios.ids],
            scenarios.label,
        ),
        "scoring_rule": _enum_text(node.scoring.rule),
        "seeds": seeds_label(int(seeds.start), int(seeds.count), int(seeds.repetitions)),
    }
    items = [(key, values[key]) for key in PARTITION_KEYS]
    factors = node.get("factors") or {}
    names = sorted(str(k) for k in factors)
    for name in names:
        if not _FACTOR_NAME.match(name) or name in RESERVED_NAMES:
            raise ConfigError(
                f"factors.{name}: a factor name must be lower-case letters, digits and '_', "
                "and not a table column name (fix: rename the factor)"
            )
        items.append((name, _scalar_text(factors[name], f"factors.{name}")))
    return CellKeys(items=tuple(items), factors=tuple(names))


def cell_path(*, _root_: DictConfig) -> str:
    """OmegaConf resolver `${cavbench.cell:}`: the composed config's cell folder."""
    return cell_keys(_root_).path


def register_resolver() -> None:
    """Register `${cavbench.cell:}` and `${cavbench.sweep_name:NAME}` (idempotent)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, cell_path)
    if not OmegaConf.has_resolver(NAME_RESOLVER):
        # Used in hydra.run.dir / hydra.sweep.dir, so a bad name fails before Hydra
        # creates any folder.
        OmegaConf.register_new_resolver(NAME_RESOLVER, lambda name: check_sweep_name(str(name)))


@dataclass(frozen=True, slots=True)
class AdapterSource:
    """The source module of a custom adapter's factory and the sha256 of its bytes: part of
    a cell's identity, so editing the adapter's code redoes its cells instead of skipping."""

    module: str
    sha256: str


def adapter_source(target: str) -> AdapterSource | None:
    """The module defining `target` and its digest; None for cavbench's own adapters (the
    cavbench version covers them) or when the module has no source file."""
    parts = target.split(".")
    for end in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:end])
        if name == "cavbench" or name.startswith("cavbench."):
            return None
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        origin = getattr(module, "__file__", None)
        if not origin:
            return None
        try:
            digest = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
        except OSError:
            return None
        return AdapterSource(module=name, sha256="sha256:" + digest)
    return None


def job_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config that identifies a cell's results: everything but `output`
    (where and how to write), `prereg` (registered per sweep) and Hydra's own node."""
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(container, dict)
    skipped = ("output", "hydra", "prereg")
    config = {str(k): v for k, v in container.items() if k not in skipped}
    # Execution-only settings and an unused model group do not identify results.
    if isinstance(config.get("adapter"), dict):
        config["adapter"] = {k: v for k, v in config["adapter"].items() if k != "max_concurrency"}
    if not config.get("model"):
        config.pop("model", None)
    return config


def config_hash(config: Mapping[str, Any]) -> str:
    """`sha256:` of the canonical JSON of a job config."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()
