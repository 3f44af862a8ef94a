"""End-to-end: ``repomin reduce --semantic-endpoint`` against a local chat-completions server;
provenance recorded, the API key never written, a failing endpoint never fatal."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.io import structural_errors

SECRET = "sk-test-never-written-0123456789"


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]], dict[str, int]]]:
    seen: list[dict[str, Any]] = []
    mode = {"status": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"auth": self.headers.get("Authorization"), "body": body})
            prompt = body["messages"][1]["content"]
            answer = '["notes.txt"]' if "JSON array" in prompt else "```\nBUG\n```"
            payload = json.dumps({"choices": [{"message": {"content": answer}}]}).encode()
            self.send_response(mode["status"])
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen, mode
    finally:
        httpd.shutdown()
        httpd.server_close()


def _run(tmp_path: Path, url: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    src = tmp_path / "repo"
    src.mkdir(exist_ok=True)
    (src / "a.txt").write_text("header\nBUG\n" + "filler line\n" * 30)
    (src / "notes.txt").write_text("notes\n" * 10)
    out = tmp_path / "out"
    result = CliRunner(env={"REPOMIN_SEMANTIC_API_KEY": SECRET}).invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command",
            "grep -q BUG a.txt && { echo FOUND; exit 1; }; exit 0", "--match", "FOUND",
            "--baseline-runs", "2", "--final-runs", "3", "--jobs", "1", "--no-session", "-q",
            "--passes", "semantic", "--semantic-endpoint", url, "--semantic-model", "tiny",
            "--semantic-timeout", "5", "--force", *extra,
        ],
        catch_exceptions=False,
    )  # fmt: skip
    text = (tmp_path / "out.repomin" / "report.json").read_text()
    return result.exit_code, json.loads(text), text


@pytest.mark.slow
def test_semantic_provenance_and_no_key_in_report(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]], dict[str, int]]
) -> None:
    url, seen, _ = server
    code, report, text = _run(tmp_path, url)
    assert code == 0
    assert structural_errors(report) == []
    ex = report["execution"]
    assert ex["semantic_reducer"] == "openai-chat-completions-v1"
    assert (ex["semantic_model"], ex["semantic_endpoint"], ex["semantic_timeout"]) == (
        "tiny",
        url,
        5.0,
    )
    assert SECRET not in text
    assert seen and all(s["auth"] == f"Bearer {SECRET}" for s in seen)
    assert (tmp_path / "out" / "a.txt").read_text() == "BUG\n"
    assert not (tmp_path / "out" / "notes.txt").exists()
    phase = next(p for p in report["phase_statistics"]["phases"] if p["name"] == "semantic")
    assert phase["accepted"] == 2


@pytest.mark.slow
def test_failing_endpoint_is_not_fatal(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]], dict[str, int]]
) -> None:
    url, _, mode = server
    mode["status"] = 500
    code, report, _ = _run(tmp_path, url)
    assert code == 0
    assert report["output"]["bytes"] == report["source"]["bytes"]
    assert report["execution"]["semantic_model"] == "tiny"


def test_semantic_options_validated(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["reduce", str(tmp_path), "-o", str(tmp_path / "o"), "--command", "true", "--match",
         "x", "--semantic-model", "m"],
    )  # fmt: skip
    assert result.exit_code == 2 and "--semantic-endpoint" in result.stderr
    result = CliRunner().invoke(
        cli,
        ["reduce", str(tmp_path), "-o", str(tmp_path / "o"), "--command", "true", "--match",
         "x", "--passes", "files,semantic"],
    )  # fmt: skip
    assert result.exit_code == 2 and "semantic pass needs" in result.stderr
