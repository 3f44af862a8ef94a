"""The semantic client never hands the API key to anyone but the endpoint it was given.

Real local HTTP servers (``http.server`` in a thread): the endpoint answers with a redirect to a
second server on another port, addressed by another host name, which records every request it
gets -- it must get none (with or without the key). An environment proxy must not see requests
to a loopback endpoint (it would get the key in clear). And a key with plain ``http://`` to a
host that is not loopback is refused before anything is sent: exit 2, one line.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.analysis.semantic import API_KEY_ENV, SemanticClient, SemanticConfig
from repomin.cli.main import cli
from repomin.errors import UsageError

SECRET = "sk-redirect-test-0123456789"


def _chat(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


@dataclass
class Server:
    """A local server: what it got, and how it answers (a status, a ``Location``)."""

    port: int = 0
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    status: int = 200
    location: str = ""


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """Two servers on two ports of 127.0.0.1: the endpoint, and the redirect target."""
    made: list[tuple[ThreadingHTTPServer, threading.Thread]] = []
    states = (Server(), Server())
    for state in states:

        class Handler(BaseHTTPRequestHandler):
            me = state

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.me.seen.append((self.command, self.path, dict(self.headers)))
                body = _chat("```\nx\n```")
                self.send_response(self.me.status)
                if self.me.location:
                    self.send_header("Location", self.me.location)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # http.server calls do_<METHOD>

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        state.port = httpd.server_address[1]
        thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        made.append((httpd, thread))
    try:
        yield states
    finally:
        for httpd, thread in made:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield
    urllib.request.install_opener(None)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("key", [SECRET, None])
def test_a_redirect_to_another_origin_is_not_followed(
    servers: tuple[Server, Server],
    caplog: pytest.LogCaptureFixture,
    code: int,
    key: str | None,
) -> None:
    endpoint, other = servers
    endpoint.status = code
    endpoint.location = f"http://localhost:{other.port}/v1/chat/completions"
    environ = {API_KEY_ENV: key} if key else {}
    client = SemanticClient(
        SemanticConfig(f"http://127.0.0.1:{endpoint.port}/v1", "m", 5.0), environ=environ
    )
    with caplog.at_level(logging.WARNING, logger="repomin.analysis.semantic"):
        assert client.smaller_file("a.py", b"x = 1\n" * 20, "") is None
    assert len(endpoint.seen) == 1
    assert endpoint.seen[0][2].get("Authorization") == (f"Bearer {key}" if key else None)
    assert other.seen == []  # not asked at all: the key never reaches it
    assert client.failures == 1
    assert "redirect" in caplog.text and SECRET not in caplog.text


def test_a_proxy_from_the_environment_never_sees_a_loopback_endpoint(
    servers: tuple[Server, Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, proxy = servers
    monkeypatch.setenv("http_proxy", f"http://localhost:{proxy.port}")
    urllib.request.install_opener(None)  # urlopen's cached opener read the proxies before
    client = SemanticClient(
        SemanticConfig(f"http://127.0.0.1:{endpoint.port}/v1", "m", 5.0),
        environ={API_KEY_ENV: SECRET},
    )
    assert client.smaller_file("a.py", b"x = 1\n" * 20, "") == b"x\n"
    assert proxy.seen == []
    assert [seen[2].get("Authorization") for seen in endpoint.seen] == [f"Bearer {SECRET}"]


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/v1",
        "http://10.0.0.7:11434/v1",
        "http://127.0.0.1.example.com/v1",
        "http://[fe80::1]:8080/v1",
        "http://0.0.0.0:11434/v1",
    ],
)
def test_a_key_over_plain_http_to_a_host_that_is_not_loopback_is_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError, match="https") as raised:
        SemanticClient(SemanticConfig(url, "m"), environ={API_KEY_ENV: SECRET})
    assert "\n" not in str(raised.value) and SECRET not in str(raised.value)
    monkeypatch.setenv(API_KEY_ENV, SECRET)
    with pytest.raises(UsageError, match="https"):
        SemanticConfig(url, "m")  # what the command line builds: refused before anything runs
    monkeypatch.delenv(API_KEY_ENV)
    SemanticClient(SemanticConfig(url, "m"), environ={})  # no key: nothing to protect


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434/v1",
        "http://127.8.9.10/v1",
        "http://localhost:8080/v1",
        "http://LOCALHOST./v1",
        "http://[::1]:11434/v1",
        "https://api.example.com/v1",
    ],
)
def test_a_key_is_allowed_over_https_and_to_loopback(url: str) -> None:
    SemanticClient(SemanticConfig(url, "m"), environ={API_KEY_ENV: SECRET})


def test_the_command_line_refuses_a_key_over_plain_http_with_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    src.mkdir()
    (src / "a.txt").write_text("BUG\n")
    args = ["reduce", str(src), "-o", str(tmp_path / "out"), "--command", "cat a.txt"]
    args += ["--match", "BUG", "--semantic-endpoint", "http://example.com/v1"]
    args += ["--semantic-model", "m"]
    result = CliRunner(env={API_KEY_ENV: SECRET}).invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "https" in lines[0], result.stderr
    assert SECRET not in result.stderr
    assert not (tmp_path / "out").exists()
