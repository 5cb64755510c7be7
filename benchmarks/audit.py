"""Time the oracle-integrity audit: the full matrix per shipped target, replay, sensitivity.

    python benchmarks/audit.py            # every shipped target, all 24 defect variants

Prints seconds per target (plan + 8 checks × every oracle variant), check runs per second,
and the time of the replay correction and of the sensitivity analysis. Wall-clock numbers
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

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    total = 0.0
    for name in shipped_target_names():
        start = time.perf_counter()
        spec = load_target(name)
        audit = audit_target(spec, DEFECT_VARIANTS)
        elapsed = time.perf_counter() - start
        total += elapsed
        runs = sum(r.runs for v in audit.variants for r in v.results)
        print(
            f"{name:<12} {audit.tasks:>3} tasks  {len(audit.variants):>2} oracle variants  "
            f"{runs:>6} check runs  {elapsed:6.2f} s  ({runs / elapsed:,.0f} runs/s)"
        )
    print(f"{'full matrix':<12} {total:6.2f} s")

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
