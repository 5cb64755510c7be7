"""Time the oracle-integrity audit: the full matrix per shipped target, replay, sensitivity.

    python benchmarks/audit.py            # every shipped target, all 24 defect variants

Prints seconds per target (plan + 8 checks × every oracle variant; wall and CPU, since the
machine may be shared), check runs per second, the whole matrix in one process and with the
default number of worker processes, and the time of the replay correction and of the
sensitivity analysis. Wall-clock numbers
are printed only; nothing is asserted or written.
"""

from __future__ import annotations

import time
from pathlib import Path

from cavbench.audit import (
    DEFECT_VARIANTS,
    audit_target,
    load_target,
    read_records,
    replay_records,
    shipped_target_names,
    summarise,
)
from cavbench.audit._run import AuditJob, default_jobs, run_audits

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    total = cpu_total = 0.0
    for name in shipped_target_names():
        start, cpu = time.perf_counter(), time.process_time()
        spec = load_target(name)
        audit = audit_target(spec, DEFECT_VARIANTS)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        total += elapsed
        cpu_total += cpu
        runs = sum(r.runs for v in audit.variants for r in v.results)
        print(
            f"{name:<12} {audit.tasks:>3} tasks  {len(audit.variants):>2} oracle variants  "
            f"{runs:>6} check runs  {elapsed:6.2f} s wall  {cpu:6.2f} s CPU  "
            f"({runs / elapsed:,.0f} runs/s)"
        )
    print(f"{'full matrix':<12} {total:6.2f} s wall, {cpu_total:6.2f} s CPU, one process")
    jobs = [AuditJob(name, None, 0, 8) for name in shipped_target_names()]
    for workers in sorted({1, default_jobs()}):
        start = time.perf_counter()
        run_audits(jobs, DEFECT_VARIANTS, jobs=workers)
        print(
            f"{'full matrix':<12} {time.perf_counter() - start:6.2f} s wall with "
            f"{workers} worker process(es) (what `cavbench audit run` does, without writing)"
        )

    start = time.perf_counter()
    records = read_records(ROOT / "artifacts" / "audit" / "retail-records")
    episodes = replay_records(records.records, load_target("retail").correct)
    summarise(episodes)
    print(
        f"replay correction ({len(episodes)} records, 2000 resamples): "
        f"{time.perf_counter() - start:.2f} s"
    )

    from cavbench.audit._sensitivity import headline, sensitivity
    from cavbench.audit.targets.v1 import V1Domain
    from cavbench.scenarios import load_pack

    start = time.perf_counter()
    pack = load_pack("core-v1")
    rows = sensitivity(V1Domain(pack))
    headline(pack)
    print(
        f"sensitivity ({len(rows)} scenario × invalidity rows + headline): "
        f"{time.perf_counter() - start:.2f} s"
    )


if __name__ == "__main__":
    main()
