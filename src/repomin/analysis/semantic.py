"""The opt-in semantic reducer's client: an OpenAI-compatible chat-completions endpoint.

Standard library only (``urllib.request``). Two questions are asked: "which of these files can
be dropped?" (a JSON list of paths) and "give a smaller version of this file" (one fenced code
block). Answers are proposals, never trusted: every one goes through the oracle. Timeouts, HTTP
errors, refused connections and garbage answers are logged and skipped, never fatal.

What leaves the machine: the command, the failure specification (regex, exit code or mode),
the tree's paths and sizes, and the text of the files asked about -- never command output or
environment values. The API key is read from ``$REPOMIN_SEMANTIC_API_KEY`` at start-up, sent
only as an ``Authorization: Bearer`` header, and never logged or written to the report; the
recorded endpoint has no query string, and URLs with credentials in them are refused.

The key goes to the endpoint's own origin only: redirects are never followed (a 3xx answer is
logged and skipped, like any HTTP error), a key with plain ``http://`` is refused unless the
host is loopback (``localhost``, ``127.0.0.0/8``, ``::1``), and requests to a loopback endpoint
never go through a proxy from the environment (``http_proxy``), which would see them in clear.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec

log = logging.getLogger(__name__)

#: ``execution.semantic_reducer``: the protocol and prompt family used.
REDUCER_ID = "openai-chat-completions-v1"
API_KEY_ENV = "REPOMIN_SEMANTIC_API_KEY"
MAX_RESPONSE_BYTES = 8 << 20

_FENCE = re.compile(r"```[^\n`]*\n(.*?)\n?```", re.DOTALL)

SYSTEM_PROMPT = (
    "You help minimise a software repository while a failing command keeps failing the same "
    "way. Propose only deletions and simplifications; never fix the failure. Answer with the "
    "requested content only."
)


@dataclass(frozen=True, slots=True)
class SemanticConfig:
    """``--semantic-endpoint URL --semantic-model NAME --semantic-timeout S``."""

    endpoint: str
    model: str
    timeout: float = 60.0
    max_file_bytes: int = 32 * 1024
    max_listing: int = 2000

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--semantic-endpoint {self.endpoint!r} must be an http(s) URL, e.g. "
                "http://localhost:11434/v1"
            )
        if parts.username is not None or parts.password is not None:
            raise UsageError(
                "--semantic-endpoint must not contain credentials; put the API key in "
                f"${API_KEY_ENV} instead"
            )
        if not self.model.strip():
            raise UsageError("--semantic-model must name a model, e.g. --semantic-model qwen2.5")
        if not self.timeout > 0:
            raise UsageError(f"--semantic-timeout {self.timeout} must be positive (seconds)")
        self.check_key(os.environ.get(API_KEY_ENV))

    def check_key(self, key: str | None) -> None:
        """Refuse to send ``key`` in clear: with ``http://`` only to a loopback host."""
        parts = urllib.parse.urlsplit(self.endpoint)
        if key and parts.scheme == "http" and not is_loopback(parts.hostname or ""):
            raise UsageError(
                f"--semantic-endpoint {self.recorded_endpoint!r} is plain http to a host that "
                f"is not loopback, and ${API_KEY_ENV} is set: the key would cross the network "
                "unencrypted; use https:// (or unset the key for an endpoint without one)"
            )

    @property
    def url(self) -> str:
        """The chat-completions URL: the endpoint itself if it already ends with it."""
        parts = urllib.parse.urlsplit(self.endpoint)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))

    @property
    def recorded_endpoint(self) -> str:
        """What the report records: scheme, host, port and path (no query, no fragment)."""
        parts = urllib.parse.urlsplit(self.endpoint)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def provenance(self) -> dict[str, Any]:
        return {
            "semantic_reducer": REDUCER_ID,
            "semantic_model": self.model,
            "semantic_endpoint": self.recorded_endpoint,
            "semantic_timeout": self.timeout,
        }


def no_provenance() -> dict[str, Any]:
    return {
        "semantic_reducer": None,
        "semantic_model": None,
        "semantic_endpoint": None,
        "semantic_timeout": None,
    }


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host name, IPv6 without brackets) names this machine's loopback
    interface without asking a resolver beyond ``localhost``: ``localhost``, ``127.0.0.0/8``,
    ``::1`` (also IPv4-mapped)."""
    name = host.rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following it would send the request (and the key) elsewhere."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"{msg}: redirects are not followed; give the final URL as --semantic-endpoint",
            headers,
            fp,
        )


Transport = Callable[[urllib.request.Request, float], bytes]


def _urlopen(request: urllib.request.Request, timeout: float) -> bytes:
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if is_loopback(urllib.parse.urlsplit(request.full_url).hostname or ""):
        handlers.append(urllib.request.ProxyHandler({}))  # a proxy cannot reach our loopback
    opener = urllib.request.build_opener(*handlers)
    with opener.open(request, timeout=timeout) as response:
        body: bytes = response.read(MAX_RESPONSE_BYTES + 1)
    if len(body) > MAX_RESPONSE_BYTES:
        raise ValueError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
    return body


class SemanticClient:
    """Asks the endpoint; every failure is logged and becomes ``None``."""

    def __init__(
        self,
        config: SemanticConfig,
        *,
        environ: Mapping[str, str] = os.environ,
        transport: Transport = _urlopen,
    ) -> None:
        self.config = config
        self._api_key = environ.get(API_KEY_ENV) or None
        config.check_key(self._api_key)
        self._transport = transport
        self.requests = 0
        self.failures = 0

    def complete(self, prompt: str) -> str | None:
        """One chat completion; the assistant's text, or None after logging why."""
        payload = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "stream": False,
        }
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.config.url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        self.requests += 1
        try:
            body = self._transport(request, self.config.timeout)
        except urllib.error.HTTPError as exc:
            self._fail(f"HTTP {exc.code} {exc.reason}")
            return None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError):
                self._fail(f"no answer within {self.config.timeout} s")
            else:
                self._fail(f"{type(exc).__name__}: {reason}")
            return None
        try:
            answer = json.loads(body)
            content = answer["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            self._fail("the answer is not a chat completion with text content")
            return None
        return content

    def _fail(self, reason: str) -> None:
        self.failures += 1
        log.warning("semantic: %s at %s; skipped", reason, self.config.recorded_endpoint)

    def smaller_file(self, path: str, content: bytes, context: str) -> bytes | None:
        """A strictly smaller version of ``path`` proposed by the model, or None."""
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return None
        prompt = (
            f"{context}\n\nHere is the file `{path}`. Return a smaller version of it that keeps "
            "the failure: delete code, definitions and data the failure does not need. Reply "
            "with the complete new file in one fenced code block and nothing else.\n\n"
            f"```\n{text}\n```"
        )
        reply = self.complete(prompt)
        if reply is None:
            return None
        fenced = _FENCE.search(reply)
        proposal = fenced.group(1) if fenced else reply.strip()
        if text.endswith("\n") and proposal and not proposal.endswith("\n"):
            proposal += "\n"
        data = proposal.encode("utf-8")
        if len(data) >= len(content):
            log.info("semantic: the proposal for %s is not smaller; skipped", path)
            return None
        return data

    def files_to_drop(self, listing: Sequence[tuple[str, int]], context: str) -> list[str] | None:
        """Paths the model thinks the failure does not need (only paths from ``listing``)."""
        shown = listing[: self.config.max_listing]
        lines = "\n".join(f"{path}\t{size}" for path, size in shown)
        prompt = (
            f"{context}\n\nThese are the repository's files (path, tab, size in bytes). Which "
            "of them can be deleted without changing the failure? Reply with a JSON array of "
            "paths and nothing else.\n\n" + lines
        )
        reply = self.complete(prompt)
        if reply is None:
            return None
        fenced = _FENCE.search(reply)
        text = fenced.group(1) if fenced else reply
        start, end = text.find("["), text.rfind("]")
        try:
            items = json.loads(text[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            items = None
        if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
            self._fail("the answer is not a JSON array of paths")
            return None
        known = {path for path, _ in shown}
        return [p for p in dict.fromkeys(items) if p in known]


def describe_spec(spec: FailureSpec) -> str:
    """The failure specification in words (no output, no environment)."""
    parts: list[str] = []
    if spec.match is not None:
        parts.append(f"output matching the regular expression {spec.match!r}")
    if spec.exit_code is not None:
        parts.append(f"exit status {spec.exit_code}")
    if spec.python_exception:
        parts.append("the same Python exception (class, message and stack frames)")
    if spec.java_exception:
        parts.append("the same Java exception (class, message and stack frames)")
    if spec.process_failure:
        parts.append("the same process failure (signal or exit status)")
    return " and ".join(parts) or "its exit status"


def failure_context(command: str, description: str) -> str:
    """The prompt's first paragraph: what fails and how the failure is recognised."""
    return (
        f"In the repository root, the shell command `{command}` fails; the failure is "
        f"recognised by {description}."
    )
