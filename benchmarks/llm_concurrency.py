"""Concurrent LLM episodes: a cell of adapter=llm against a loopback fake OpenAI-compatible
server that takes 200 ms per call, through the real `openai` SDK.

Prints the wall time of 400 episodes (mock pack x 80 seeds, one model call each) at
`adapter.max_concurrency=32`, the ideal time (calls x latency / concurrency) and their ratio
(the goal: within 1.3x), plus the serial time of a small slice for comparison.

    python benchmarks/llm_concurrency.py
    python benchmarks/llm_concurrency.py --episodes 100 --concurrency 8
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path

import pyarrow.parquet as pq

from cavbench.models.fake_server import FakeChatServer
from cavbench.study import compose, run_cell
from cavbench.tables import cell_dirs

MOCK_SCENARIOS = 5


def _serve(latency: float, pipe: Connection) -> None:
    with FakeChatServer(latency_s=latency) as server:
        pipe.send(server.base_url)
        pipe.recv()  # serve until told to stop


@contextmanager
def _server_process(latency: float) -> Iterator[str]:
    """The fake server in its own process, so its CPU does not compete for our GIL."""
    ours, theirs = mp.Pipe()
    process = mp.get_context("spawn").Process(target=_serve, args=(latency, theirs))
    process.start()
    try:
        yield str(ours.recv())
    finally:
        ours.send("stop")
        process.join(timeout=10)


def _run(base_url: str, root: Path, episodes: int, concurrency: int) -> tuple[float, int]:
    cfg = compose(
        [
            "scenarios=mock",
            "adapter=llm",
            "model=openai_compatible",
            "model.name=fake-model",
            f"model.base_url={base_url}",
            f"seeds.count={episodes // MOCK_SCENARIOS}",
            f"adapter.max_concurrency={concurrency}",
            f"output.root={root}",
            "output.name=bench",
            "output.progress=false",
        ]
    )
    started = time.perf_counter()
    run_cell(cfg)
    elapsed = time.perf_counter() - started
    (cell,) = cell_dirs(root / "bench")
    return elapsed, pq.read_metadata(cell / "model_calls.parquet").num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the fake server needs no key; keep the output clean
    with _server_process(args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        serial_n = 10
        serial, _ = _run(server, Path(tmp) / "serial", serial_n, 1)
        elapsed, calls = _run(server, Path(tmp) / "concurrent", args.episodes, args.concurrency)
    ideal = calls * args.latency / args.concurrency
    print(f"serial:     {serial_n} episodes in {serial:.2f} s ({serial / serial_n:.3f} s/episode)")
    print(
        f"concurrent: {args.episodes} episodes, {calls} calls at concurrency "
        f"{args.concurrency}: {elapsed:.2f} s"
    )
    print(f"ideal:      {calls} x {args.latency} s / {args.concurrency} = {ideal:.2f} s")
    print(f"ratio:      {elapsed / ideal:.2f}x ideal (goal: <= 1.3x)")


if __name__ == "__main__":
    main()
