"""Docker test fixtures: a real engine or a visible skip, runners that always clean up.

Every test here marked ``docker`` needs an engine that answers and the locally built image
``repomin-test/busybox:1`` (``docker/build-test-images.sh``; ``.ci/docker-setup.sh`` does both).
Without them those tests are skipped with the reason. Containers and volumes made by the tests
carry a session label starting with :data:`LABEL_PREFIX`; a session fixture checks that none
owned by this process survives the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docker._support import BUSYBOX, CLIENT, HERE, SKIP_REASON, leftovers, new_label


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"Docker tests skipped: {SKIP_REASON}")
    for item in items:
        if HERE in Path(str(item.path)).parents and item.get_closest_marker("docker"):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _nothing_survives_the_suite() -> Iterator[None]:
    yield
    if CLIENT is not None:
        try:
            assert leftovers() == [], "Docker objects with a test label survived the test suite"
        finally:
            CLIENT.close()


@pytest.fixture(scope="session")
def client() -> Any:
    assert CLIENT is not None, SKIP_REASON
    return CLIENT


RunnerFactory = Callable[..., Any]


def _factory(stack: list[Any]) -> RunnerFactory:
    from repomin.runners.docker import DockerRunner

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("image", BUSYBOX)
        kwargs.setdefault("session_label", new_label())
        runner = DockerRunner(**kwargs)
        stack.append(runner)
        return runner

    return make


def _close_all(stack: list[Any]) -> None:
    for runner in stack:
        runner.close()
        assert leftovers(runner.session_label) == []


@pytest.fixture
def make_runner(client: Any) -> Iterator[RunnerFactory]:
    """Build a :class:`DockerRunner` (busybox image by default); closed and checked after."""
    stack: list[Any] = []
    yield _factory(stack)
    _close_all(stack)


@pytest.fixture(scope="module")
def module_runner(client: Any) -> Iterator[RunnerFactory]:
    """Like ``make_runner`` but shared by a module (runners cost ~0.5 s to start)."""
    stack: list[Any] = []
    yield _factory(stack)
    _close_all(stack)
