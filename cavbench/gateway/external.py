"""`adapter=external`: an out-of-process candidate as an ordinary `ExecutionAdapter`.

Per episode: open a gateway session over the episode's adapter session, serve it on loopback
(REST, or MCP over streamable HTTP), start the candidate's command with

    CAVBENCH_GATEWAY_URL   the session's base URL (REST) or MCP endpoint
    CAVBENCH_RUN_TOKEN     the session's bearer token
    CAVBENCH_SCENARIO_ID   the scenario id
    CAVBENCH_SEED          the episode's seed
    CAVBENCH_TRANSPORT     rest | mcp

wait for it under a wall-clock limit, close the session and hand the candidate's (untrusted)
report back to the runner, which finalises and scores as for any adapter. A candidate that
exits non-zero or overruns its limit raises `CandidateProcessError` (an `AdapterFailure`): the
episode's `error` says so, and its exit code and stderr tail are kept on the episode.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cavbench.adapters import AdapterFailure, AdapterResult
from cavbench.gateway._core import GatewaySession
from cavbench.gateway._errors import GatewayError
from cavbench.runtime.session import AdapterSession
from cavbench.trace import JSONObject

CANDIDATE_PROCESS_KEY = "candidate_process"
"""Report metadata key the harness writes (the candidate's own value under it is replaced)."""

STDERR_TAIL_CHARS = 2000


class Transport(StrEnum):
    REST = "rest"
    MCP = "mcp"


class CandidateProcessError(AdapterFailure):
    """The candidate process exited non-zero or overran its wall-clock limit."""


@dataclass(frozen=True, slots=True)
class ExternalAdapter:
    """Runs `command` once per episode against a fresh gateway session."""

    command: str
    transport: Transport = Transport.REST
    time_limit_s: float = 60.0
    name: str = "external"
    version: str = "0.0.0"
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not shlex.split(self.command):
            raise GatewayError(
                "adapter.command is empty (fix: adapter.command='node agent.js', the candidate's "
                "command line)"
            )
        if self.time_limit_s <= 0:
            raise GatewayError(
                f"adapter.time_limit_s={self.time_limit_s}: must be > 0 (fix: a limit in seconds)"
            )
        object.__setattr__(self, "transport", Transport(self.transport))

    def run(self, session: AdapterSession) -> AdapterResult:
        gateway = GatewaySession(session)
        with _Serving(self.transport, gateway) as url:
            outcome = self._run_process(url, gateway, session)
        metadata: JSONObject = {
            "exit_code": outcome.exit_code,
            "stderr_tail": outcome.stderr_tail,
            "timed_out": outcome.timed_out,
            "transport": self.transport.value,
        }
        if outcome.timed_out:
            raise CandidateProcessError(
                f"candidate {self.command!r} overran its wall-clock limit of {self.time_limit_s}s "
                f"and was killed; stderr tail: {outcome.stderr_tail[-300:]!r}",
                {CANDIDATE_PROCESS_KEY: metadata},
            )
        if outcome.exit_code != 0:
            raise CandidateProcessError(
                f"candidate {self.command!r} exited with code {outcome.exit_code}; "
                f"stderr tail: {outcome.stderr_tail[-300:]!r}",
                {CANDIDATE_PROCESS_KEY: metadata},
            )
        result = gateway.result(default_name=self.name)
        reported = dict(result.metadata)
        # The runner names the episode's adapter after this adapter; keep what the candidate
        # called itself.
        reported["candidate_name"] = reported.pop("adapter_name", None)
        reported["candidate_version"] = reported.pop("adapter_version", None)
        return AdapterResult(
            final_message=result.final_message,
            completion_status=result.completion_status,
            metadata={**reported, CANDIDATE_PROCESS_KEY: metadata},
        )

    def _run_process(self, url: str, gateway: GatewaySession, session: AdapterSession) -> _Outcome:
        environment = {
            **os.environ,
            **self.env,
            "CAVBENCH_GATEWAY_URL": url,
            "CAVBENCH_RUN_TOKEN": gateway.run_token,
            "CAVBENCH_SCENARIO_ID": session.scenario.id,
            "CAVBENCH_SEED": str(session.seed),
            "CAVBENCH_TRANSPORT": self.transport.value,
        }
        try:
            process = subprocess.Popen(
                shlex.split(self.command),
                env=environment,
                cwd=Path(self.cwd) if self.cwd else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise CandidateProcessError(
                f"cannot start candidate {self.command!r}: {exc} (fix: check adapter.command "
                "and adapter.cwd)",
                {CANDIDATE_PROCESS_KEY: {"exit_code": None, "stderr_tail": str(exc)}},
            ) from exc
        timed_out = False
        try:
            _, err = process.communicate(timeout=self.time_limit_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            process.kill()
            _, err = process.communicate()
        finally:
            gateway.close()
        tail = err.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:]
        return _Outcome(process.returncode, tail, timed_out)


@dataclass(frozen=True, slots=True)
class _Outcome:
    exit_code: int
    stderr_tail: str
    timed_out: bool


class _Serving:
    """Serve one session for the length of a `with` block; yields the candidate's URL."""

    def __init__(self, transport: Transport, session: GatewaySession) -> None:
        self._transport = transport
        self._session = session
        self._server: Any = None

    def __enter__(self) -> str:
        if self._transport is Transport.REST:
            from cavbench.gateway.rest import RestGateway

            rest = RestGateway().start()
            self._server = rest
            return rest.open(self._session)
        from cavbench.gateway.mcp_server import McpHttpGateway

        mcp = McpHttpGateway(self._session).start()
        self._server = mcp
        return mcp.url

    def __exit__(self, *exc: object) -> None:
        self._session.close()
        if self._server is not None:
            self._server.stop()


def external(
    command: str,
    transport: str = "rest",
    time_limit_s: float = 60.0,
    name: str = "external",
    cwd: str | None = None,
) -> ExternalAdapter:
    """The `adapter=external` factory (Hydra instantiates it)."""
    return ExternalAdapter(
        command=command,
        transport=Transport(transport),
        time_limit_s=time_limit_s,
        name=name,
        cwd=cwd,
    )


__all__ = [
    "CANDIDATE_PROCESS_KEY",
    "CandidateProcessError",
    "ExternalAdapter",
    "Transport",
    "external",
]
