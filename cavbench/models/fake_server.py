"""A loopback fake of an OpenAI-compatible Chat Completions server, for offline tests and
benchmarks that drive the real `openai` SDK.

Binds 127.0.0.1 on an ephemeral port; each request is answered by a `responder` given the
decoded request body, which returns a `FakeReply` (status, JSON body or raw text, delay,
headers). Hand-written on the standard library's `http.server` because what is under test is
the real SDK's HTTP behaviour (retries, timeouts, parsing), which a transport mock would skip.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class FakeReply:
    status: int = 200
    body: Mapping[str, Any] | str = field(default_factory=dict)
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], FakeReply]


def completion(
    text: str | None = None,
    tool_calls: Sequence[tuple[str, str]] = (),
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 10,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Chat Completions response body; `tool_calls` are (name, raw arguments) pairs."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def report_success(_body: dict[str, Any]) -> FakeReply:
    """A responder whose every answer is `report_outcome(success)`."""
    args = orjson.dumps({"status": "success", "message": "done"}).decode()
    return FakeReply(body=completion(None, [("report_outcome", args)]))


class FakeChatServer:
    """`with FakeChatServer(responder) as server:` … `server.base_url` … `server.requests`."""

    def __init__(self, responder: Responder = report_success, *, latency_s: float = 0.0) -> None:
        self.responder = responder
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm on, the body
            # waits for the client's delayed ACK (~40 ms per response).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = orjson.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.authorizations.append(self.headers.get("Authorization") or "")
                reply = server.responder(body)
                time.sleep(server.latency_s + reply.delay_s)
                data = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else orjson.dumps(dict(reply.body))
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
