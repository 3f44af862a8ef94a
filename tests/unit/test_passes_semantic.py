"""The semantic reducer against a local chat-completions server started by the tests: good
answers, garbage, HTTP 500, timeouts; the API key from the environment only; the pass."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from repomin.analysis.semantic import (
    API_KEY_ENV,
    REDUCER_ID,
    SemanticClient,
    SemanticConfig,
    describe_spec,
    failure_context,
    no_provenance,
)
from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec
from repomin.passes.semantic import SemanticReduce
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, reduce_with_reduction, text_tree

Reply = Callable[[dict[str, Any]], tuple[int, bytes, float]]


def chat(content: str) -> bytes:
    return json.dumps(
        {"id": "x", "object": "chat.completion", "choices": [{"message": {"content": content}}]}
    ).encode()


@dataclass
class FakeEndpoint:
    """What the server answers, and what it received."""

    reply: Reply = lambda body: (200, chat("```\n\n```"), 0.0)
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    state = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            state.requests.append((self.path, dict(self.headers), body))
            status, payload, delay = state.reply(body)
            time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def client_for(
    endpoint: FakeEndpoint, *, timeout: float = 5.0, key: str | None = None
) -> SemanticClient:
    environ = {API_KEY_ENV: key} if key else {}
    return SemanticClient(SemanticConfig(endpoint.url, "tiny-model", timeout), environ=environ)


SOURCE = b"def a():\n    return 1\n\n\ndef b():\n    raise ValueError('boom')\n\n\nb()\n"
SMALLER = "def b():\n    raise ValueError('boom')\n\n\nb()"


def test_smaller_file_protocol_and_key(endpoint: FakeEndpoint) -> None:
    endpoint.reply = lambda body: (200, chat(f"Sure!\n```python\n{SMALLER}\n```\n"), 0.0)
    client = client_for(endpoint, key="sk-secret-123")
    proposal = client.smaller_file("m.py", SOURCE, "context line")
    assert proposal == SMALLER.encode() + b"\n"
    path, headers, body = endpoint.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-secret-123"
    assert body["model"] == "tiny-model" and body["stream"] is False
    assert body["messages"][0]["role"] == "system"
    assert "context line" in body["messages"][1]["content"]
    assert SOURCE.decode() in body["messages"][1]["content"]


def test_no_key_no_header(endpoint: FakeEndpoint) -> None:
    client_for(endpoint).smaller_file("m.py", SOURCE, "")
    assert "Authorization" not in endpoint.requests[0][1]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ((500, b'{"error": "internal"}', 0.0), "HTTP 500"),
        ((200, b"<html>not json</html>", 0.0), "not a chat completion"),
        ((200, json.dumps({"choices": []}).encode(), 0.0), "not a chat completion"),
        ((200, json.dumps({"choices": [{"message": {"content": 7}}]}).encode(), 0.0), "text"),
        ((200, chat("x"), 1.5), "no answer within"),
    ],
)
def test_failures_are_logged_and_skipped(
    endpoint: FakeEndpoint,
    caplog: pytest.LogCaptureFixture,
    reply: tuple[int, bytes, float],
    reason: str,
) -> None:
    endpoint.reply = lambda body: reply
    client = client_for(endpoint, timeout=0.3, key="sk-secret-123")
    with caplog.at_level(logging.WARNING, logger="repomin.analysis.semantic"):
        assert client.smaller_file("m.py", SOURCE, "") is None
    assert client.failures == 1
    assert reason in caplog.text
    assert "sk-secret-123" not in caplog.text


def test_connection_refused_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    client = SemanticClient(SemanticConfig("http://127.0.0.1:9/v1", "m", 0.5), environ={})
    with caplog.at_level(logging.WARNING, logger="repomin.analysis.semantic"):
        assert client.files_to_drop([("a", 1), ("b", 2)], "") is None
    assert client.failures == 1 and "semantic:" in caplog.text


def test_not_smaller_is_dropped(endpoint: FakeEndpoint) -> None:
    endpoint.reply = lambda body: (200, chat("```\n" + SOURCE.decode() + "# more\n```"), 0.0)
    assert client_for(endpoint).smaller_file("m.py", SOURCE, "") is None


def test_files_to_drop(endpoint: FakeEndpoint) -> None:
    endpoint.reply = lambda body: (
        200,
        chat('Here:\n```json\n["docs/a.md", "nope/unknown", "docs/a.md", "b.txt"]\n```'),
        0.0,
    )
    drop = client_for(endpoint).files_to_drop([("docs/a.md", 10), ("b.txt", 3), ("m.py", 5)], "")
    assert drop == ["docs/a.md", "b.txt"]
    endpoint.reply = lambda body: (200, chat("I cannot tell."), 0.0)
    assert client_for(endpoint).files_to_drop([("a", 1)], "") is None


def test_config_validation_and_provenance() -> None:
    cfg = SemanticConfig("https://host:8443/api/v1/?api-version=2", "m", 12.5)
    assert cfg.url == "https://host:8443/api/v1/chat/completions?api-version=2"
    assert cfg.provenance() == {
        "semantic_reducer": REDUCER_ID,
        "semantic_model": "m",
        "semantic_endpoint": "https://host:8443/api/v1/",
        "semantic_timeout": 12.5,
    }
    full = SemanticConfig("http://h/v1/chat/completions", "m")
    assert full.url == "http://h/v1/chat/completions"
    assert set(no_provenance().values()) == {None}
    for bad in ("ftp://h/v1", "http://user:pw@h/v1", "localhost:11434"):
        with pytest.raises(UsageError):
            SemanticConfig(bad, "m")
    with pytest.raises(UsageError):
        SemanticConfig("http://h", "m", 0)
    with pytest.raises(UsageError):
        SemanticConfig("http://h", " ")


def test_context_describes_the_spec_without_output() -> None:
    text = failure_context("pytest -x", describe_spec(FailureSpec(match="Boom", exit_code=1)))
    assert "`pytest -x`" in text and "'Boom'" in text and "exit status 1" in text
    assert "Python exception" in describe_spec(FailureSpec(python_exception=True))


# -- the pass -----------------------------------------------------------------------------------


def raises_boom(tree: Tree) -> bool:
    data = tree["m.py"].data if "m.py" in tree else b""
    try:
        exec(compile(data, "m.py", "exec"), {})
    except ValueError as exc:
        return str(exc) == "boom"
    except Exception:
        return False
    return False


def test_pass_proposals_go_through_the_oracle(endpoint: FakeEndpoint) -> None:
    def reply(body: dict[str, Any]) -> tuple[int, bytes, float]:
        prompt = body["messages"][1]["content"]
        if "JSON array" in prompt:
            return 200, chat('["docs/readme.md", "m.py"]'), 0.0
        if "`m.py`" in prompt:
            return 200, chat(f"```\n{SMALLER}\n```"), 0.0
        return 200, chat("```\n\n```"), 0.0  # empties every other file

    endpoint.reply = reply
    tree = text_tree({"m.py": SOURCE, "docs/readme.md": "# Docs\n" * 20, "keep.txt": "k\n"})
    problem = PredicateProblem(tree, lambda t: raises_boom(t) and "keep.txt" in t)
    sem = SemanticReduce(client_for(endpoint), "ctx")
    sem.run(problem)
    # dropping m.py with the docs is rejected by the oracle; the smaller m.py is accepted;
    # emptying keep.txt is accepted too (the predicate only needs it to exist)
    assert problem.current["m.py"].data == SMALLER.encode() + b"\n"
    assert "docs/readme.md" in problem.current
    assert problem.current["keep.txt"].data == b""
    asked = len(endpoint.requests)
    sem.run(problem)  # a new tree and a new m.py: asked about once more each
    assert len(endpoint.requests) == asked + 2
    sem.run(problem)  # nothing changed since: nothing is asked again
    assert len(endpoint.requests) == asked + 2


def test_pass_guard_and_no_client(endpoint: FakeEndpoint) -> None:
    endpoint.reply = lambda body: (200, chat("```\ndef broken(:\n```"), 0.0)
    problem = PredicateProblem(text_tree({"m.py": SOURCE}), lambda t: True)
    SemanticReduce(client_for(endpoint), "").run(problem)
    assert problem.calls == 0 and problem.current["m.py"].data == SOURCE
    SemanticReduce(None).run(problem)
    assert problem.proposed == 1  # the guarded-out proposal, counted as a no-op


@pytest.mark.parametrize("jobs", [1, 2])
def test_pass_in_the_real_driver(endpoint: FakeEndpoint, jobs: int) -> None:
    endpoint.reply = lambda body: (
        (500, b"", 0.0)
        if "JSON array" in body["messages"][1]["content"]
        else (200, chat(f"```\n{SMALLER}\n```"), 0.0)
    )
    tree = text_tree({"m.py": SOURCE, "n.txt": "x\n"})
    result, ledger = reduce_with_reduction(
        {"semantic": SemanticReduce(client_for(endpoint), "")}, tree, raises_boom, jobs=jobs
    )
    assert result["m.py"].data == SMALLER.encode() + b"\n"
    counters = ledger.phase("semantic")
    assert counters.accepted >= 1 and counters.oracle_samples >= 1
