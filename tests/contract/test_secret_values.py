"""Issue 9: secret values never reach an artifact, whatever key or field carries them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cavbench import redaction
from cavbench.adapters import AdapterResult
from cavbench.evaluation import ScoringRule
from cavbench.reports import RunInfo, write_run
from cavbench.runner import run_episodes
from cavbench.runtime import AdapterSession
from cavbench.scenarios import load_pack
from cavbench.tables import CellContext, CellTables, EpisodeKey, write_table

SECRET = "s3cr3t-db-password-123"
PATTERNED = "sk-live-ABCDEFGH12345678"


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_PASSWORD", SECRET)
    monkeypatch.setenv("CAVBENCH_REDACT_PATTERNS", r"sk-live-[A-Za-z0-9]{16}")
    redaction.reset()
    yield
    monkeypatch.undo()
    redaction.reset()


class Leaky:
    """Puts secrets everywhere an adapter can: message, metadata under an innocent key,
    tool arguments, an idempotency key, and finally an exception message."""

    name, version = "leaky", "0"

    def run(self, session: AdapterSession) -> AdapterResult:
        session.clarify(f"environment says {SECRET}")
        target = next(s for s in session.scenario.plan.steps if s.namespace and s.resource_id)
        session.tools.write(
            step_id="s",
            tool_name="cancel_order",
            namespace=target.namespace or "",
            resource_id=target.resource_id or "",
            changes={},
            logical_operation_id="op",
            idempotency_key=PATTERNED,
            args={"note": SECRET},
        )
        return AdapterResult(final_message=f"done {SECRET}", metadata={"env": {"DB": SECRET}})


class Raiser:
    name, version = "raiser", "0"

    def run(self, session: AdapterSession) -> AdapterResult:
        raise RuntimeError(f"connect failed with {SECRET} / {PATTERNED}")


def _files_text(root: Path) -> str:
    """Every file's content as text; Parquet files decoded (their pages are compressed)."""
    parts = []
    for path in sorted(root.rglob("*")):
        if path.suffix == ".parquet":
            parts.append(str(pq.read_table(path).to_pylist()))
        elif path.is_file():
            parts.append(path.read_text(encoding="utf-8"))
    return "".join(parts)


@pytest.mark.usefixtures("secrets")
@pytest.mark.parametrize("adapter", [Leaky(), Raiser()], ids=["leaky", "raiser"])
def test_no_secret_value_reaches_tables_or_run_dirs(tmp_path: Path, adapter: Any) -> None:
    pack = load_pack("core-v1")
    episodes = run_episodes(pack, adapter, scenario_ids=[pack.scenarios[0].id], rule=ScoringRule.V1)
    info = RunInfo("run", pack, adapter.name, adapter.version, 0, ScoringRule.V1, "test")
    write_run(tmp_path / "runs", info, episodes)
    keys = {
        "profile": "p",
        "adapter": "a",
        "pack_id": pack.pack_id,
        "scenarios": "all",
        "scoring_rule": "v1",
        "seeds": "0-0",
    }
    tables = CellTables(CellContext("sw", "cell", keys, (), pack.pack_version, pack.digest))
    for e in episodes:
        tables.add(
            EpisodeKey("e", e.scenario.id, e.scenario.family.value, 0, 0), e.trace, e.verdict
        )
    (tmp_path / "cell").mkdir()
    for table, data in tables.build().items():
        write_table(tmp_path / "cell", table, data, {})
    if isinstance(adapter, Leaky):
        assert episodes[0].trace.error is None  # every leak above was recorded
    text = _files_text(tmp_path)
    assert "[REDACTED]" in text
    assert SECRET not in text
    assert PATTERNED not in text


def test_short_or_innocent_values_are_left_alone() -> None:
    redactor = redaction.build_redactor({"PASS": "1", "HOME": "/home/me-and-my-secrets"})
    assert not redactor.active
    assert redactor.text("1 /home/me-and-my-secrets") == "1 /home/me-and-my-secrets"
