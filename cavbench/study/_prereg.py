"""Pre-registration of a sweep's experiment config and analysis plan, and its deviation log.

Set ``prereg.analysis_plan=PATH`` (usually in the experiment file) and the first job of the
sweep writes ``SWEEP_DIR/preregistration.json`` **before its first episode runs**: the
experiment config with its hash, and the analysis plan's path, SHA-256 and text. Every later
job (and every resumed or re-launched sweep under the same ``output.name``) compares its own
experiment config, its plan and, when it would replace a complete cell, that cell's config
hash with what is registered. A difference stops the job unless a reason is given with
``prereg.deviation="..."``; the change is then appended to ``SWEEP_DIR/deviations.jsonl``
(append-only: never rewritten, one JSON object per line) and the job goes on. A plan edited
after the sweep ran is recorded with ``cavbench deviation SWEEP_DIR --reason "..."``.
``cavbench analyze`` prints the registered hashes and every deviation.

What "the experiment config" is: under a Hydra multirun, the sweep as Hydra records it in
``multirun.yaml`` -- the composed config, the command-line overrides (sweep lists included)
and the sweeper's parameters -- without where the output goes (``output``, ``hydra.*``
settings) and without the deviation reason itself. Without a multirun record (a single run,
or cells run in-process with :func:`cavbench.study.run_cell`) it is the job config before
interpolation with the values that name the cell (profile, adapter name, scenarios, scoring
rule, seeds, factor values) left out, so that the cells of one design agree.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, TypeVar

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from cavbench.errors import ConfigError
from cavbench.tables import Provenance
from cavbench.tables._collect import PREREGISTRATION_FILES, current_provenance
from cavbench.tables._io import replace_atomically

PREREG_NAME, DEVIATIONS_NAME, PACKS_NAME = PREREGISTRATION_FILES
MULTIRUN_NAME = "multirun.yaml"
_LOCK_NAME = ".preregistration.lock"
# Overrides that say where or how a sweep runs, not what it is.
_NOT_DESIGN = ("output.", "hydra.", "hydra/", "prereg.deviation", "adapter.max_concurrency")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanRecord(_Record):
    """The analysis plan as registered."""

    path: str
    """As configured (relative to where the sweep was started, or absolute)."""
    sha256: str
    """``sha256:`` of the file's bytes."""
    text: str
    """The plan itself, so a later change can be shown and diffed."""


class Preregistration(_Record):
    """`preregistration.json`: written once, before the sweep's first episode, never changed."""

    kind: Literal["cavbench.preregistration"] = "cavbench.preregistration"
    schema_version: str = "1"
    sweep: str
    experiment_source: Literal["multirun", "job"]
    """Where the experiment config came from: Hydra's multirun record, or the job config."""
    experiment: dict[str, JsonValue]
    experiment_hash: str
    plan: PlanRecord | None
    registered_by: str
    """The cell whose job wrote the registration."""
    provenance: Provenance


class DeviationKind(StrEnum):
    """What changed after registration."""

    EXPERIMENT_CONFIG = "experiment_config"
    ANALYSIS_PLAN = "analysis_plan"
    CELL_CONFIG = "cell_config"
    """A complete cell was redone (``output.overwrite``) under a different config."""
    PACK_CONTENT = "pack_content"
    """A scenario pack's digest differs from the one first registered for its id."""


class RegisteredPack(_Record):
    """One line of `registered_packs.jsonl`: the digest a pack had when the sweep first ran it."""

    pack_id: str
    digest: str
    cell: str
    """The cell whose job first ran the pack."""


class Deviation(_Record):
    """One line of `deviations.jsonl`."""

    seq: int
    """1, 2, ... in the order recorded."""
    kind: DeviationKind
    reason: str
    registered_hash: str
    """The hash in force before this change (the registration's, or the previous deviation's)."""
    new_hash: str
    cell: str | None = None
    """The cell whose job recorded it (None when recorded by `cavbench deviation`)."""
    detail: str = ""


class PreregState(_Record):
    """A sweep's registration and its deviations, as `analyze` reports them."""

    registration: Preregistration
    deviations: tuple[Deviation, ...]
    packs: tuple[RegisteredPack, ...] = ()
    """Each pack's digest when the sweep first ran it (packs are registered as first seen)."""


def _hash(value: object) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    """``sha256:`` of a file's bytes."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _without_deviation(config: dict[str, Any]) -> dict[str, Any]:
    prereg = dict(config.get("prereg") or {})
    prereg.pop("deviation", None)
    out = {**config, "prereg": prereg}
    # As in the config hash: how many episodes run at once, and an unused model group, are
    # not part of the design.
    if isinstance(out.get("adapter"), dict):
        out["adapter"] = {k: v for k, v in out["adapter"].items() if k != "max_concurrency"}
    if not out.get("model"):
        out.pop("model", None)
    return out


def _design_override(text: str) -> bool:
    key = text.lstrip("+~")
    return not key.startswith(_NOT_DESIGN)


def experiment_design(cfg: DictConfig, sweep_dir: Path) -> tuple[str, dict[str, Any]]:
    """The experiment config of a job's sweep and where it came from (see the module doc)."""
    multirun = sweep_dir / MULTIRUN_NAME
    if _in_multirun() and multirun.is_file():
        raw = OmegaConf.load(multirun)
        assert isinstance(raw, DictConfig)
        hydra = raw.get("hydra") or {}
        overrides = OmegaConf.to_container(hydra.get("overrides", {}).get("task", []))
        params = OmegaConf.to_container(hydra.get("sweeper", {}).get("params") or {})
        config = OmegaConf.to_container(raw, resolve=False, enum_to_str=True)
        assert isinstance(config, dict)
        assert isinstance(overrides, list)
        body = {str(k): v for k, v in config.items() if k not in ("hydra", "output")}
        return "multirun", {
            "config": _without_deviation(body),
            "overrides": sorted(str(o) for o in overrides if _design_override(str(o))),
            "sweeper_params": params,
        }
    config = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    assert isinstance(config, dict)
    body = {str(k): v for k, v in config.items() if k not in ("hydra", "output")}
    # Leave out what names the cell, so that the cells of one design agree.
    for section, keys in (("profile", ("name",)), ("adapter", ("name",)), ("scoring", ("rule",))):
        if isinstance(body.get(section), dict):
            body[section] = {k: v for k, v in body[section].items() if k not in keys}
    body.pop("scenarios", None)
    body.pop("seeds", None)
    body["factors"] = sorted(str(k) for k in (body.get("factors") or {}))
    return "job", {"config": _without_deviation(body)}


def _in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode is RunMode.MULTIRUN


def _plan_record(path_text: str) -> PlanRecord:
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(
            f"prereg.analysis_plan={path_text!r}: no such file (fix: write the analysis plan "
            "first, or give its path relative to where you start the sweep)"
        )
    data = path.read_bytes()
    return PlanRecord(
        path=path_text,
        sha256="sha256:" + hashlib.sha256(data).hexdigest(),
        text=data.decode("utf-8", errors="replace"),
    )


@contextmanager
def _locked(sweep_dir: Path) -> Iterator[None]:
    # Parallel jobs of one sweep register and append under one lock (POSIX advisory lock; on
    # a shared file system without lock support, start the sweep with one job first).
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with (sweep_dir / _LOCK_NAME).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_Line = TypeVar("_Line", bound=BaseModel)


def _read_lines(path: Path, model: type[_Line], what: str) -> tuple[_Line, ...]:
    """The records of an append-only JSON-lines file (none when it does not exist)."""
    if not path.is_file():
        return ()
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise ConfigError(
                f"{path}: line {number} is not {what} (fix: restore the file; it is append-only)"
            ) from exc
    return tuple(records)


def read_preregistration(sweep_dir: Path) -> PreregState | None:
    """The sweep's registration and deviations, or None when it was not pre-registered."""
    path = Path(sweep_dir) / PREREG_NAME
    if not path.is_file():
        return None
    try:
        registration = Preregistration.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise ConfigError(
            f"{path}: not a readable pre-registration ({exc.__class__.__name__}) (fix: restore "
            "it from version control; a registration is never rewritten)"
        ) from exc
    deviations = _read_lines(Path(sweep_dir) / DEVIATIONS_NAME, Deviation, "a deviation record")
    packs = _read_lines(Path(sweep_dir) / PACKS_NAME, RegisteredPack, "a registered pack")
    return PreregState(registration=registration, deviations=deviations, packs=packs)


def _check_pack(
    sweep_dir: Path,
    state: PreregState,
    pack: tuple[str, str] | None,
    reason: str | None,
    cell: str,
) -> PreregState:
    """Register a pack's digest when first seen; a later different digest is a deviation."""
    if pack is None:
        return state
    pack_id, digest = pack
    known = [p.digest for p in state.packs if p.pack_id == pack_id]
    if not known:
        entry = RegisteredPack(pack_id=pack_id, digest=digest, cell=cell)
        with (sweep_dir / PACKS_NAME).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry.model_dump(mode="json"), sort_keys=True) + "\n")
        return state.model_copy(update={"packs": (*state.packs, entry)})
    changes = [
        d.new_hash
        for d in state.deviations
        if d.kind is DeviationKind.PACK_CONTENT and d.detail.startswith(f"pack {pack_id}:")
    ]
    current = changes[-1] if changes else known[0]
    if current == digest:
        return state
    if not reason:
        raise ConfigError(
            f"{sweep_dir / PACKS_NAME}: scenario pack {pack_id!r} changed since the sweep first "
            f"ran it ({current} -> {digest}). A change after registration is a deviation (fix: "
            'state why with prereg.deviation="REASON", or restore the pack, or version it '
            "under a new pack id)"
        )
    deviation = Deviation(
        seq=len(state.deviations) + 1,
        kind=DeviationKind.PACK_CONTENT,
        reason=reason,
        registered_hash=current,
        new_hash=digest,
        cell=cell,
        detail=f"pack {pack_id}: digest {current} -> {digest}",
    )
    return _append(sweep_dir, state, deviation)


def _current(state: PreregState, kind: DeviationKind, registered: str) -> str:
    latest = [d.new_hash for d in state.deviations if d.kind is kind]
    return latest[-1] if latest else registered


def _append(sweep_dir: Path, state: PreregState, deviation: Deviation) -> PreregState:
    with (sweep_dir / DEVIATIONS_NAME).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(deviation.model_dump(mode="json"), sort_keys=True) + "\n")
    return state.model_copy(update={"deviations": (*state.deviations, deviation)})


def _deviate(
    sweep_dir: Path,
    state: PreregState,
    kind: DeviationKind,
    new_hash: str,
    reason: str | None,
    *,
    cell: str | None,
    detail: str,
) -> PreregState:
    registered = {
        DeviationKind.EXPERIMENT_CONFIG: state.registration.experiment_hash,
        DeviationKind.ANALYSIS_PLAN: (
            state.registration.plan.sha256 if state.registration.plan else "none"
        ),
    }.get(kind, "")
    current = _current(state, kind, registered) if kind is not DeviationKind.CELL_CONFIG else ""
    if kind is not DeviationKind.CELL_CONFIG and current == new_hash:
        return state
    if not reason:
        raise ConfigError(
            f"{sweep_dir / PREREG_NAME}: the {kind.value.replace('_', ' ')} changed since it was "
            f"pre-registered ({detail}). A change after registration is a deviation (fix: state "
            'why with prereg.deviation="REASON", which records it in '
            f"{DEVIATIONS_NAME}; or start a new sweep with another output.name)"
        )
    deviation = Deviation(
        seq=len(state.deviations) + 1,
        kind=kind,
        reason=reason,
        registered_hash=current or registered,
        new_hash=new_hash,
        cell=cell,
        detail=detail,
    )
    return _append(sweep_dir, state, deviation)


def check_in(
    cfg: DictConfig,
    *,
    sweep: str,
    sweep_dir: Path,
    cell: str,
    replacing_config_hash: str | None,
    config_hash: str,
    pack: tuple[str, str] | None = None,
) -> PreregState | None:
    """Register the sweep (first job) or check this job against its registration.

    Called by every job before its first episode. ``replacing_config_hash`` is the config hash
    of a complete cell this job is about to redo (``output.overwrite``), if any; ``pack`` is
    the ``(pack id, digest)`` the job will run (None when the pack cannot be loaded: the job
    then fails on its own, with its usual record). Raises
    :class:`ConfigError` for an unexplained change; returns the state after any deviation.
    """
    prereg = cfg.get("prereg") or {}
    plan_path = prereg.get("analysis_plan")
    reason = prereg.get("deviation")
    reason = str(reason) if reason else None
    if plan_path is None and not (sweep_dir / PREREG_NAME).is_file():
        return None  # not pre-registered: leave no trace in the sweep folder
    with _locked(sweep_dir):
        state = read_preregistration(sweep_dir)
        if state is None and plan_path is None:
            return None
        source, design = experiment_design(cfg, sweep_dir)
        design_hash = _hash(design)
        plan = None if plan_path is None else _plan_record(str(plan_path))
        if state is None:
            registration = Preregistration(
                sweep=sweep,
                experiment_source=source,
                experiment=design,
                experiment_hash=design_hash,
                plan=plan,
                registered_by=cell,
                provenance=current_provenance(),
            )
            text = json.dumps(registration.model_dump(mode="json"), indent=2, sort_keys=True)
            replace_atomically(sweep_dir / PREREG_NAME, (text + "\n").encode("utf-8"))
            fresh = PreregState(registration=registration, deviations=())
            return _check_pack(sweep_dir, fresh, pack, reason, cell)
        state = _deviate(
            sweep_dir,
            state,
            DeviationKind.EXPERIMENT_CONFIG,
            design_hash,
            reason,
            cell=cell,
            detail=f"experiment config hash {design_hash}",
        )
        state = _deviate(
            sweep_dir,
            state,
            DeviationKind.ANALYSIS_PLAN,
            "none" if plan is None else plan.sha256,
            reason,
            cell=cell,
            detail=f"analysis plan {plan_path!r}",
        )
        if replacing_config_hash is not None and replacing_config_hash != config_hash:
            state = _deviate(
                sweep_dir,
                state,
                DeviationKind.CELL_CONFIG,
                config_hash,
                reason,
                cell=cell,
                detail=f"cell {cell} redone: config hash {replacing_config_hash} -> {config_hash}",
            )
        return _check_pack(sweep_dir, state, pack, reason, cell)


def record_plan_deviation(sweep_dir: Path, reason: str, plan: Path | None = None) -> Deviation:
    """`cavbench deviation`: record that the analysis plan changed after registration.

    ``plan`` defaults to the registered path. Raises :class:`ConfigError` when the sweep was
    not pre-registered, the reason is empty, or the plan did not change.
    """
    sweep_dir = Path(sweep_dir)
    if not reason.strip():
        raise ConfigError("--reason is empty (fix: say why the plan changed)")
    with _locked(sweep_dir):
        state = read_preregistration(sweep_dir)
        if state is None:
            raise ConfigError(
                f"{sweep_dir}: no {PREREG_NAME} (fix: the sweep was not pre-registered; set "
                "prereg.analysis_plan=PATH before its first job)"
            )
        registered = state.registration.plan
        path_text = str(plan) if plan is not None else (registered.path if registered else None)
        if path_text is None:
            raise ConfigError("no analysis plan was registered (fix: pass --plan PATH)")
        record = _plan_record(path_text)
        before = len(state.deviations)
        after = _deviate(
            sweep_dir,
            state,
            DeviationKind.ANALYSIS_PLAN,
            record.sha256,
            reason,
            cell=None,
            detail=f"analysis plan {path_text!r}",
        )
        if len(after.deviations) == before:
            raise ConfigError(
                f"{path_text}: unchanged since it was registered or last recorded (nothing to "
                "record)"
            )
        return after.deviations[-1]


def plan_status(state: PreregState) -> str | None:
    """A warning when the registered plan file now differs from its last recorded hash."""
    plan = state.registration.plan
    if plan is None:
        return None
    current = _current(state, DeviationKind.ANALYSIS_PLAN, plan.sha256)
    path = Path(plan.path)
    if not path.is_file():
        return f"the analysis plan {plan.path} is not readable from here (not re-checked)"
    if file_sha256(path) != current:
        return (
            f"the analysis plan {plan.path} changed since it was registered and no deviation "
            'records it (fix: cavbench deviation SWEEP_DIR --reason "...")'
        )
    return None


def describe(state: PreregState, *, check_plan: bool = True) -> list[str]:
    """Lines that `cavbench analyze` prints: the registered hashes and every deviation (and,
    with ``check_plan``, a warning when the plan file changed without a record)."""
    r = state.registration
    lines = [
        f"pre-registered: experiment config {r.experiment_hash} ({r.experiment_source})",
        "pre-registered: analysis plan "
        + (f"{r.plan.sha256} ({r.plan.path})" if r.plan else "none"),
        "registered packs: "
        + (", ".join(f"{p.pack_id} {p.digest}" for p in state.packs) or "none"),
        f"deviations: {len(state.deviations)}",
    ]
    for d in state.deviations:
        where = f" [{d.cell}]" if d.cell else ""
        lines.append(
            f"  #{d.seq} {d.kind.value}{where}: {d.reason} ({d.registered_hash} -> {d.new_hash})"
        )
    warning = plan_status(state) if check_plan else None
    if warning:
        lines.append(f"warning: {warning}")
    return lines
