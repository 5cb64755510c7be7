"""One Hydra job = one cell: run its episodes, write its tables and its manifest.

Order of writes, so that nothing half done is ever read as done:

1. a complete cell whose every table still matches its checksum is skipped (resume);
2. otherwise `manifest.json` is written with status `RUNNING` before anything else;
3. each table is written to a temporary file in row groups as the episodes run (so a cell's
   memory does not grow with its episodes) and renamed into place at the end;
4. `manifest.json` is rewritten last with status `COMPLETE`, row counts and checksums.

A job holds the cell's lock (`.cell.lock`, `filelock`) from the skip check to the last
write, so two sweeps into one folder never write one cell at once: the second waits, then
finds the cell complete and skips it.

A job that fails (a bad pack, an adapter that cannot be built, a full disk) writes status
`FAILED`, its traceback into the manifest and `traceback.txt`, and re-raises so that Hydra
reports it (on a full disk the partial tables are removed first, so the record fits). An
adapter raising *inside* an episode is not a job failure: the runner records the error on
the episode, which is scored as failed, and the cell goes on.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from cavbench.adapters import ExecutionAdapter
from cavbench.errors import CavBenchError, ConfigError
from cavbench.evaluation import ScoringRule, Verdict, evaluate
from cavbench.redaction import redact_text
from cavbench.runner import relaxed_gc, run_episode, select
from cavbench.scenarios import Scenario, load_pack
from cavbench.study import _progress as progress
from cavbench.study._cell import (
    AdapterSource,
    CellKeys,
    adapter_source,
    cell_keys,
    check_sweep_name,
    config_hash,
    job_config,
    takes_profile,
)
from cavbench.study._prereg import check_in
from cavbench.study._sharing import (
    cell_lock,
    record_failure,
    remove_stale_tmp,
    store_pack,
    sweep_dir,
)
from cavbench.tables import (
    TRACEBACK_NAME,
    AdapterRecord,
    CellContext,
    CellManifest,
    CellStatus,
    CellTables,
    EpisodeKey,
    PackRecord,
    SeedBlock,
    Table,
    TableError,
    TableRecord,
    TableWriter,
    read_cell_manifest,
    verify_cell,
    write_manifest,
)
from cavbench.tables._collect import current_provenance
from cavbench.trace import EpisodeTrace

log = logging.getLogger(__name__)

ROW_GROUP_EPISODES = 2_000
"""Episodes a cell holds in memory before writing them as one row group of each table."""

open_table_writer = TableWriter
"""How a job opens a table file (a seam: tests make it fail to stand in for a crash or a
full disk)."""


@dataclass(frozen=True, slots=True)
class CellPlan:
    """A composed job config, checked and turned into what the job needs."""

    keys: CellKeys
    sweep: str
    sweep_dir: Path
    config: dict[str, Any]
    config_hash: str
    pack_ref: str
    families: tuple[str, ...]
    scenario_ids: tuple[str, ...]
    rule: ScoringRule
    seeds: SeedBlock
    profile: str
    adapter_name: str
    adapter_factory: Mapping[str, Any] = field(default_factory=dict)
    max_concurrency: int = 1
    adapter_source: AdapterSource | None = None
    overwrite: bool = False
    progress: bool = True
    time_limit: float | None = None

    @property
    def cell(self) -> str:
        return self.keys.path

    @property
    def cell_dir(self) -> Path:
        return self.sweep_dir / self.keys.path

    @classmethod
    def from_config(cls, cfg: DictConfig) -> CellPlan:
        """Check a composed config; raises `ConfigError` naming the key and the fix."""
        keys = cell_keys(cfg)
        seeds = SeedBlock(
            start=int(cfg.seeds.start),
            count=int(cfg.seeds.count),
            repetitions=int(cfg.seeds.repetitions),
        )
        if seeds.count < 1 or seeds.repetitions < 1 or seeds.start < 0:
            raise ConfigError(
                f"seeds: start={seeds.start} count={seeds.count} repetitions={seeds.repetitions}: "
                "need start >= 0, count >= 1 and repetitions >= 1"
            )
        _check_no_missing(cfg)
        config = job_config(cfg)
        factory = config["adapter"].get("factory") or {}
        if "_target_" not in factory:
            raise ConfigError(
                f"adapter.factory of adapter {cfg.adapter.name!r} has no _target_ "
                "(fix: set _target_ to the import path of a callable returning an ExecutionAdapter)"
            )
        output = cfg.output
        name = check_sweep_name(str(output.name))
        target = factory["_target_"]
        return cls(
            keys=keys,
            sweep=name,
            sweep_dir=sweep_dir(Path(str(output.root)) / name, keys),
            config=config,
            config_hash=config_hash(config),
            pack_ref=str(cfg.scenarios.pack),
            families=tuple(str(getattr(f, "value", f)) for f in cfg.scenarios.families),
            scenario_ids=tuple(str(i) for i in cfg.scenarios.ids),
            rule=ScoringRule(str(getattr(cfg.scoring.rule, "value", cfg.scoring.rule))),
            seeds=seeds,
            profile=keys.as_dict()["profile"],
            adapter_name=str(cfg.adapter.name),
            adapter_factory=factory,
            max_concurrency=max(1, int(cfg.adapter.get("max_concurrency", 1))),
            adapter_source=adapter_source(target) if isinstance(target, str) else None,
            overwrite=bool(output.overwrite),
            progress=bool(output.progress),
            time_limit=episode_seconds(cfg),
        )


@dataclass(frozen=True, slots=True)
class CellResult:
    """What a job returns to Hydra (kept small: a launcher ships it back between processes)."""

    cell: str
    directory: str
    status: CellStatus
    skipped: bool
    n_episodes: int
    n_errors: int


_In = TypeVar("_In")
_Out = TypeVar("_Out")

WINDOW_PER_WORKER = 4
"""Episodes submitted ahead of the oldest unfinished one, per worker thread: enough to keep every
worker busy while a slow episode blocks the in-order output, and few enough that finished
episodes waiting behind it never pile up (memory stays flat at any cell size)."""


def ordered_map(
    pool: ThreadPoolExecutor, fn: Callable[[_In], _Out], items: Iterable[_In], window: int
) -> Iterator[_Out]:
    """`pool.map(fn, items)` with at most `window` items submitted and not yet yielded.

    `Executor.map` submits every item at once, so the results finished behind one slow episode
    stay in memory until it ends; this keeps a bounded sliding window instead."""
    pending: deque[Future[_Out]] = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _check_no_missing(cfg: DictConfig) -> None:
    """A mandatory value left at `???` (e.g. `model.name`) is a ConfigError naming the key."""
    ignored = ("output.", "hydra.", "prereg.")
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith(ignored))
    if missing:
        example = missing[0]
        raise ConfigError(
            f"config: mandatory value(s) not set: {', '.join(missing)} "
            f"(fix: give each on the command line, e.g. {example}=VALUE, or in an experiment file)"
        )


def episode_seconds(cfg: DictConfig) -> float | None:
    """`limits.episode_seconds`, checked (None when unset)."""
    limits = cfg.get("limits")
    value = None if limits is None else limits.get("episode_seconds")
    if value is None:
        return None
    if not float(value) > 0:
        raise ConfigError(
            f"limits.episode_seconds={value!r}: must be a positive number of seconds (or null)"
        )
    return float(value)


def _episodes(plan: CellPlan, scenarios: list[Scenario]) -> Iterator[tuple[Scenario, int, int]]:
    for scenario in scenarios:
        for seed in range(plan.seeds.start, plan.seeds.start + plan.seeds.count):
            for repetition in range(plan.seeds.repetitions):
                yield scenario, seed, repetition


def _build_adapter(plan: CellPlan) -> ExecutionAdapter:
    kwargs = dict(plan.adapter_factory)
    if "profile" not in kwargs and takes_profile(kwargs):
        kwargs["profile"] = plan.profile  # only a factory that takes one (the baseline engine)
    try:
        adapter = instantiate(kwargs)
    except InstantiationException as exc:
        raise ConfigError(
            f"adapter {plan.adapter_name!r}: cannot build it from adapter.factory "
            f"(_target_={plan.adapter_factory.get('_target_')!r}): {exc}"
        ) from exc
    if not isinstance(adapter, ExecutionAdapter):
        raise ConfigError(
            f"adapter {plan.adapter_name!r}: {plan.adapter_factory.get('_target_')} returned "
            f"{type(adapter).__name__}, which lacks name/version/run (fix: return an ExecutionAdapter)"
        )
    return adapter


def _skip_reason(plan: CellPlan) -> str | None:
    """Why the cell can be skipped (it is complete and intact), or None to run it."""
    if plan.overwrite or not (plan.cell_dir / "manifest.json").is_file():
        return None
    try:
        existing = read_cell_manifest(plan.cell_dir)
    except TableError as exc:
        log.warning("%s: unreadable manifest, redoing the cell (%s)", plan.cell, exc)
        return None
    if existing.status is CellStatus.COMPLETE and existing.config_hash != plan.config_hash:
        raise ConfigError(
            f"{plan.cell_dir}: this cell folder holds complete results of another config "
            f"(config hash {existing.config_hash}, this job's is {plan.config_hash}). Either a "
            "value that is swept is not part of the cell's folder name (fix: put it under "
            "factors, e.g. +factors.NAME=VALUE and refer to it as ${factors.NAME}), or the "
            "config changed since the sweep ran (fix: choose another output.name, or set "
            "output.overwrite=true)"
        )
    if existing.status is not CellStatus.COMPLETE:
        log.info("%s: found status %s, redoing the cell", plan.cell, existing.status.value)
        return None
    if existing.n_infra_errors:
        log.info(
            "%s: %d infra_error episode(s), redoing the cell", plan.cell, existing.n_infra_errors
        )
        return None
    changed = _adapter_changed(plan, existing)
    if changed:
        log.warning(
            "%s: the adapter's code changed since this cell ran (%s): REDOING the cell",
            plan.cell,
            changed,
        )
        return None
    problems = verify_cell(plan.cell_dir, existing)
    if problems:
        log.warning(
            "%s: complete but damaged (%s), redoing the cell", plan.cell, "; ".join(problems)
        )
        return None
    return f"complete, {existing.n_episodes} episodes, checksums verified"


def _adapter_changed(plan: CellPlan, existing: CellManifest) -> str | None:
    """How a custom adapter differs from the one that made a complete cell (None: same)."""
    recorded = existing.adapter
    source = plan.adapter_source
    if recorded is None or source is None:
        return None
    if recorded.source_sha256 != source.sha256:
        return f"{source.module} was {recorded.source_sha256}, is now {source.sha256}"
    version = str(_build_adapter(plan).version)
    if version != recorded.version:
        return f"adapter version was {recorded.version}, is now {version}"
    return None


def _check_preregistration(cfg: DictConfig, plan: CellPlan) -> None:
    """Register the sweep (first job), or check this job against it, before any episode."""
    replacing: str | None = None
    if plan.overwrite and (plan.cell_dir / "manifest.json").is_file():
        try:
            existing = read_cell_manifest(plan.cell_dir)
        except TableError:
            existing = None
        if existing is not None and existing.status is CellStatus.COMPLETE:
            replacing = existing.config_hash
    try:
        loaded = load_pack(plan.pack_ref)
        pack: tuple[str, str] | None = (loaded.pack_id, loaded.digest)
    except CavBenchError:
        pack = None  # the job fails on its own, recording FAILED and its traceback
    check_in(
        cfg,
        sweep=plan.sweep,
        sweep_dir=plan.sweep_dir,
        cell=plan.cell,
        replacing_config_hash=replacing,
        config_hash=plan.config_hash,
        pack=pack,
    )


def run_cell(cfg: DictConfig) -> CellResult:
    """Run one cell as configured, or skip it when it is already complete and intact."""
    plan = CellPlan.from_config(cfg)
    with cell_lock(plan.cell_dir, plan.cell):
        _check_preregistration(cfg, plan)
        return _run_locked(plan)


def _run_locked(plan: CellPlan) -> CellResult:
    reason = _skip_reason(plan)
    if reason is not None:
        log.info("%s: skipped (%s)", plan.cell, reason)
        existing = read_cell_manifest(plan.cell_dir)
        return CellResult(
            plan.cell,
            str(plan.cell_dir),
            existing.status,
            True,
            existing.n_episodes,
            existing.n_errors,
        )
    directory = plan.cell_dir
    remove_stale_tmp(directory)  # ours alone: we hold the cell's lock
    (directory / TRACEBACK_NAME).unlink(missing_ok=True)
    manifest = CellManifest(
        status=CellStatus.RUNNING,
        sweep=plan.sweep,
        cell=plan.cell,
        keys=plan.keys.as_dict(),
        factors=plan.keys.factors,
        provenance=current_provenance(),
        scoring_rule=plan.rule.value,
        profile=plan.profile,
        seeds=plan.seeds,
        config=plan.config,
        config_hash=plan.config_hash,
    )
    try:
        write_manifest(directory, manifest)
        manifest = _run(plan, manifest)
    except Exception:
        text = traceback.format_exc()
        record_failure(directory, manifest, redact_text(text))
        log.error("%s: FAILED (traceback in %s)", plan.cell, directory / TRACEBACK_NAME)
        raise
    log.info(
        "%s: COMPLETE, %d episodes (%d adapter errors, %d infra errors)",
        plan.cell,
        manifest.n_episodes,
        manifest.n_errors,
        manifest.n_infra_errors,
    )
    return CellResult(
        plan.cell, str(directory), manifest.status, False, manifest.n_episodes, manifest.n_errors
    )


def _run(plan: CellPlan, manifest: CellManifest) -> CellManifest:
    pack = load_pack(plan.pack_ref)
    key_pack = plan.keys.as_dict()["pack_id"]
    if pack.pack_id != key_pack:
        raise ConfigError(
            f"scenarios.pack={plan.pack_ref!r}: its pack.json says pack_id {pack.pack_id!r} "
            f"but the cell folder was named {key_pack!r} (fix: make the folder name and pack_id agree)"
        )
    scenarios = select(pack, list(plan.scenario_ids) or None, list(plan.families) or None)
    adapter = _build_adapter(plan)
    manifest = manifest.model_copy(
        update={
            "pack": PackRecord(
                ref=plan.pack_ref,
                id=pack.pack_id,
                version=pack.pack_version,
                digest=pack.digest,
                stored=store_pack(pack, plan.sweep_dir),
            ),
            "adapter": AdapterRecord(
                name=plan.adapter_name,
                reported_name=str(adapter.name),
                version=str(adapter.version),
                source_module=None if plan.adapter_source is None else plan.adapter_source.module,
                source_sha256=None if plan.adapter_source is None else plan.adapter_source.sha256,
            ),
            "scenario_ids": tuple(s.id for s in scenarios),
        }
    )
    write_manifest(plan.cell_dir, manifest)
    context = CellContext(
        sweep=plan.sweep,
        cell=plan.cell,
        keys=plan.keys.as_dict(),
        factors=plan.keys.factors,
        pack_version=pack.pack_version,
        pack_digest=pack.digest,
    )
    tables = CellTables(context)
    total = len(scenarios) * plan.seeds.count * plan.seeds.repetitions
    bar = tqdm(
        _episodes(plan, scenarios),
        total=total,
        desc=_short_label(plan),
        unit="ep",
        leave=False,
        disable=not (plan.progress and sys.stderr.isatty()),
    )

    def one(item: tuple[Scenario, int, int]) -> tuple[EpisodeKey, EpisodeTrace, Verdict]:
        scenario, seed, repetition = item
        episode_id = plan.keys.episode_id(scenario.id, seed, repetition)
        trace = run_episode(
            scenario,
            adapter,
            seed=seed,
            run_id=episode_id,
            repetition=repetition,
            time_limit=plan.time_limit,
        )
        key = EpisodeKey(episode_id, scenario.id, scenario.family.value, seed, repetition)
        return key, trace, evaluate(scenario, trace, plan.rule)

    footer = {
        "sweep": plan.sweep,
        "cell": plan.cell,
        "factors": list(plan.keys.factors),
        "cavbench_version": manifest.provenance.cavbench_version,
        "git_commit": manifest.provenance.git_commit,
        "pack_id": pack.pack_id,
        "pack_digest": pack.digest,
        "scoring_rule": plan.rule.value,
        "config_hash": plan.config_hash,
    }
    records: dict[str, TableRecord] = {}
    with ExitStack() as stack:
        writers: dict[Table, TableWriter] = {}
        for table in Table:
            writer = open_table_writer(plan.cell_dir, table, footer, plan.keys.factors)
            writers[table] = writer
            stack.callback(writer.abort)  # undone by pop_all once every table is in place

        def flush() -> None:
            for table, data in tables.drain().items():
                writers[table].write(data)

        def add(key: EpisodeKey, trace: EpisodeTrace, verdict: Verdict) -> None:
            tables.add(key, trace, verdict)
            if tables.n_buffered >= ROW_GROUP_EPISODES:
                flush()

        with relaxed_gc():
            if plan.max_concurrency > 1:
                # I/O-bound adapters (model calls): episodes run in threads and are yielded in
                # input order, so the tables are the same as a serial run's. The bar counts
                # finished episodes.
                with ThreadPoolExecutor(plan.max_concurrency, thread_name_prefix="episode") as pool:
                    try:
                        window = WINDOW_PER_WORKER * plan.max_concurrency
                        for key, trace, verdict in ordered_map(pool, one, bar.iterable, window):
                            add(key, trace, verdict)
                            bar.update()
                    except BaseException:
                        pool.shutdown(wait=True, cancel_futures=True)  # a failed job stops now
                        raise
                bar.close()
            else:
                for item in bar:
                    add(*one(item))
        flush()
        for table, writer in writers.items():
            written = writer.close()
            records[table.value] = TableRecord(
                file=written.path.name, rows=written.rows, sha256=written.sha256
            )
        stack.pop_all()
    final = manifest.model_copy(
        update={
            "status": CellStatus.COMPLETE,
            "n_episodes": tables.n_episodes,
            "n_errors": tables.n_errors,
            "n_infra_errors": tables.n_infra_errors,
            "tables": records,
        }
    )
    write_manifest(plan.cell_dir, final)
    return final


def _short_label(plan: CellPlan) -> str:
    """The episode bar's label: the cell's profile or adapter, clipped so that the counts,
    rate and ETA fit in 80 columns (the full cell path is in the log)."""
    keys = plan.keys.as_dict()
    label = keys["adapter"] if keys["profile"] == "none" else keys["profile"]
    return label if len(label) <= 20 else label[:19] + "…"


def task(cfg: DictConfig) -> CellResult:
    """The Hydra task function behind `cavbench-sweep` (one call per cell)."""
    result = run_cell(cfg)
    if bool(cfg.output.progress):
        ran = 0 if result.skipped else result.n_episodes
        progress.report(CellPlan.from_config(cfg).sweep_dir, ran)
    return result
