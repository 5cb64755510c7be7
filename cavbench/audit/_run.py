"""Run the audit matrix over several targets, in worker processes when asked.

The unit of work is one oracle variant of one target (its eight checks). Variants are
independent, so they spread over processes; each worker loads a target by name and plans it
once (the plan is deterministic, so every worker derives the same one), then audits the
variants it is handed. Results come back in submission order, so the tables do not depend
on ``jobs``. Targets given as objects rather than names (a :class:`TargetSpec` built in
code) run in this process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial

from cavbench.audit._audit import TargetAudit, VariantAudit, assemble, audit_variant
from cavbench.audit._checks import AuditPlan, plan_audit
from cavbench.audit._defects import DefectVariant, select_variants
from cavbench.audit._load import load_target
from cavbench.audit._spec import TargetSpec


@dataclass(frozen=True, slots=True)
class AuditJob:
    """One target to audit: loaded by ``name`` (in workers too) on ``tasks``."""

    name: str
    tasks: tuple[str, ...] | None
    seed: int
    pairs: int


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: ``done`` of ``total`` variants of ``target``, after ``seconds``."""

    target: str
    done: int
    total: int
    variant: str
    seconds: float


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may use, at most 4."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, usable or 1))


_CACHE: dict[AuditJob, tuple[TargetSpec, AuditPlan]] = {}


def _prepared(job: AuditJob) -> tuple[TargetSpec, AuditPlan]:
    if job not in _CACHE:
        spec = load_target(job.name)
        _CACHE[job] = (
            spec,
            plan_audit(spec.correct, job.tasks, seed=job.seed, max_pairs=job.pairs),
        )
    return _CACHE[job]


def _audit_one(job: AuditJob, defects: str, index: int) -> VariantAudit:
    spec, plan = _prepared(job)
    variant = spec.variants(select_variants(defects))[index]
    return audit_variant(spec.name, variant, plan)


def _on_done(
    tick: Callable[[int, VariantAudit], None], t: int, future: Future[VariantAudit]
) -> None:
    if future.exception() is None:  # a failure is raised where the result is collected
        tick(t, future.result())


def run_audits(
    jobs_: Sequence[AuditJob],
    defects: Sequence[DefectVariant],
    *,
    jobs: int = 1,
    progress: Callable[[Progress], None] | None = None,
) -> list[TargetAudit]:
    """Audit every target of ``jobs_`` against ``defects``; ``jobs`` worker processes (1:
    in this process). ``progress`` is told after each variant."""
    selector = ",".join(d.variant_id for d in defects) or "none"
    prepared = [_prepared(job) for job in jobs_]
    counts = [len(spec.variants(defects)) for spec, _ in prepared]
    start = time.perf_counter()
    done = [0] * len(jobs_)

    def tick(t: int, variant: VariantAudit) -> None:
        done[t] += 1
        if progress is not None:
            seconds = time.perf_counter() - start
            progress(Progress(prepared[t][0].name, done[t], counts[t], variant.variant_id, seconds))

    results: list[list[VariantAudit]] = []
    if jobs <= 1:
        for t, job in enumerate(jobs_):
            row = []
            for i in range(counts[t]):
                row.append(_audit_one(job, selector, i))
                tick(t, row[-1])
            results.append(row)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures: list[list[Future[VariantAudit]]] = []
            for t, job in enumerate(jobs_):
                row_futures = []
                for i in range(counts[t]):
                    future = pool.submit(_audit_one, job, selector, i)
                    future.add_done_callback(partial(_on_done, tick, t))
                    row_futures.append(future)
                futures.append(row_futures)
            results = [[f.result() for f in row] for row in futures]
    return [
        assemble(spec, plan, tuple(row))
        for (spec, plan), row in zip(prepared, results, strict=True)
    ]
