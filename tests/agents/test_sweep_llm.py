"""adapter=llm in a sweep: the new tables, record -> replay, concurrency, infra errors on
resume, and the API key in no artifact."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from analysis import BootstrapConfig
from cavbench.cli import main
from cavbench.models.fake_server import FakeChatServer, FakeReply, completion
from cavbench.study import compose, run_cell
from cavbench.tables import Table, cell_dirs, collect, read_cell_manifest, recompute
from pipelines.analyze import AnalyzeOptions, run_analyze

LLM = ["scenarios=mock", "output.progress=false", "output.name=llm", "adapter=llm"]


def _config(root: Path, *overrides: str) -> Any:
    return compose([*LLM, f"output.root={root}", *overrides])


def _endpoint(server: FakeChatServer) -> list[str]:
    return [
        "model=openai_compatible",
        "model.name=fake-model",
        f"model.base_url={server.base_url}",
        "model.max_retries=0",
    ]


def _respond(body: dict[str, Any]) -> FakeReply:
    """Deterministic: probe a tool with bad arguments, then report."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turn == 0:
        first = body["tools"][0]["function"]["name"]
        return FakeReply(body=completion("Checking.", [(first, "{}")]))
    args = json.dumps({"status": "success", "message": "done"})
    return FakeReply(body=completion(None, [("report_outcome", args)]))


def _checksums(cell: Path) -> dict[str, tuple[int, str]]:
    manifest = read_cell_manifest(cell)
    return {name: (t.rows, t.sha256) for name, t in manifest.tables.items()}


def test_a_sweep_writes_model_calls_and_messages_and_replays_identically(tmp_path: Path) -> None:
    with FakeChatServer(_respond) as server:
        recorded = run_cell(_config(tmp_path / "a", *_endpoint(server)))
    (cell,) = cell_dirs(tmp_path / "a" / "llm")
    calls = pq.read_table(cell / "model_calls.parquet").to_pylist()
    messages = pq.read_table(cell / "messages.parquet").to_pylist()
    episodes = pq.read_table(cell / "episodes.parquet").to_pylist()
    assert (recorded.n_episodes, len(calls), len(messages)) == (5, 10, 5 * 6)
    assert {e["status"] for e in episodes} == {"completed"}
    assert {e["model_name"] for e in episodes} == {"fake-model"}
    assert {
        (e["model_turns"], e["prompt_tokens"], e["stop_reason"], e["n_invalid_tool_calls"])
        for e in episodes
    } == {(2, 200, "report_outcome", 1)}
    # The probe reads with no arguments: an invalid call, and no write to retry.
    assert {e["n_retries"] for e in episodes} == {0}
    replay = ["model=replay", f"model.sweep_dir={tmp_path / 'a' / 'llm'}"]
    run_cell(_config(tmp_path / "b", *replay))
    (again,) = cell_dirs(tmp_path / "b" / "llm")
    assert _checksums(again) == _checksums(cell)
    assert recompute(tmp_path / "a" / "llm").ok
    merged = collect(tmp_path / "a" / "llm")
    assert merged.manifest.tables[Table.MODEL_CALLS.value].rows == 10


def test_replay_of_a_different_conversation_fails_the_job(tmp_path: Path) -> None:
    with FakeChatServer(_respond) as server:
        run_cell(_config(tmp_path / "a", *_endpoint(server)))
    replay = [
        "model=replay",
        f"model.sweep_dir={tmp_path / 'a' / 'llm'}",
        "adapter.factory.max_turns=7",  # harmless ...
        "model.name=another-model",  # ... but another model: every call misses
    ]
    with pytest.raises(Exception, match="no recorded call"):
        run_cell(_config(tmp_path / "b", *replay))


def test_concurrent_episodes_give_the_serial_tables(tmp_path: Path) -> None:
    script = ["model=scripted", "model.function=tests.agents.scripts:probe_then_report"]
    run_cell(_config(tmp_path / "serial", *script, "adapter.max_concurrency=1"))
    run_cell(_config(tmp_path / "threads", *script, "adapter.max_concurrency=4"))
    (serial,) = cell_dirs(tmp_path / "serial" / "llm")
    (threads,) = cell_dirs(tmp_path / "threads" / "llm")
    assert _checksums(serial) == _checksums(threads)
    assert read_cell_manifest(serial).config_hash == read_cell_manifest(threads).config_hash


def _flaky(down: dict[str, bool]) -> Any:
    def respond(body: dict[str, Any]) -> FakeReply:
        if down["MK-02"] and "O-9002" in json.dumps(body["messages"][1]):
            return FakeReply(status=503, body={"error": {"message": "overloaded"}})
        return _respond(body)

    return respond


def test_infra_errors_are_counted_and_the_cell_reruns_on_resume(tmp_path: Path) -> None:
    down = {"MK-02": True}
    with FakeChatServer(_flaky(down)) as server:
        cfg = _config(tmp_path, *_endpoint(server))
        first = run_cell(cfg)
        (cell,) = cell_dirs(tmp_path / "llm")
        manifest = read_cell_manifest(cell)
        statuses = pq.read_table(cell / "episodes.parquet").column("status").to_pylist()
        down["MK-02"] = False
        second = run_cell(cfg)
    assert (first.skipped, manifest.n_infra_errors, manifest.n_errors) == (False, 1, 0)
    assert sorted(statuses) == ["completed"] * 4 + ["infra_error"]
    assert not second.skipped
    assert read_cell_manifest(cell).n_infra_errors == 0


@pytest.mark.slow
def test_analyze_leaves_infra_errors_out_of_rates_and_reports_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeChatServer(_flaky({"MK-02": True})) as server:
        run_cell(_config(tmp_path, *_endpoint(server)))
    args = ["analyze", str(tmp_path / "llm"), "--out", str(tmp_path / "cli"), "--resamples", "200"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "Model usage (infra_error episodes are excluded" in printed
    assert "infra_errors" in printed
    analysed = run_analyze(
        tmp_path / "llm",
        tmp_path / "analysis",
        AnalyzeOptions(
            bootstrap=BootstrapConfig(n_resamples=200, seed=1), permutation_resamples=99
        ),
    ).bundle
    assert set(analysed.metrics.frame.get_column("n").to_list()) == {4}  # infra error left out
    assert analysed.usage is not None
    assert analysed.usage.select("episodes", "infra_errors", "model_turns").row(0) == (5, 1, 9)


def test_the_api_key_appears_in_no_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-cavbench-" + secrets.token_hex(16)
    monkeypatch.setenv("CAVBENCH_TEST_KEY", key)
    with FakeChatServer(_respond) as server, caplog.at_level("DEBUG"):
        run_cell(
            _config(
                tmp_path / "sweeps",
                *_endpoint(server),
                "model.api_key_env=CAVBENCH_TEST_KEY",
                f"model.cache.path={tmp_path / 'cache.sqlite'}",
            )
        )
        collect(tmp_path / "sweeps" / "llm")
        sent = set(server.authorizations)
    assert sent == {f"Bearer {key}"}  # the key was used ...
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 20
    needle = key.encode()
    for path in files:  # ... and is in no byte of any file, compressed or not
        assert needle not in path.read_bytes(), path
        if path.suffix == ".parquet":
            assert key not in json.dumps(pq.read_table(path).to_pylist(), default=str), path
    assert key not in caplog.text
