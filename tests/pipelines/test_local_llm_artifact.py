"""The frozen local-model run (artifacts/local-llm: SmolLM2-135M on llama.cpp's server, core-v1,
two repetitions) replays offline from its own model_calls into the same tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "artifacts" / "local-llm"


def _cell(sweep: Path) -> Path:
    (manifest,) = sweep.rglob("manifest.json")
    return manifest.parent


def test_the_frozen_local_model_run_replays_into_the_same_tables(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable, "-m", "cavbench.sweep", "-m", "experiment=local_llm",
            "model=replay", f"model.sweep_dir={FROZEN}", "model.cache.path=null",
            f"output.root={tmp_path}", "output.progress=false",
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,  # nothing may be written beside the repository's files
    )  # fmt: skip
    frozen, fresh = _cell(FROZEN), _cell(tmp_path / "local_llm")
    recorded = json.loads((frozen / "manifest.json").read_text())["tables"]
    replayed = json.loads((fresh / "manifest.json").read_text())["tables"]
    assert recorded.keys() == replayed.keys()
    for table in recorded.keys() - {"model_calls"}:
        assert replayed[table]["sha256"] == recorded[table]["sha256"], table
    # A replayed call is never a cache hit; every other column of every call is the recording's.
    calls = [pl.read_parquet(d / "model_calls.parquet").drop("cache_hit") for d in (frozen, fresh)]
    assert calls[0].height == recorded["model_calls"]["rows"] > 0
    assert calls[0].equals(calls[1])
