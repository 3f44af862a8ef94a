"""Real Python cases: old sdists (``pip download`` at run time) that fail on Python 3.11.

* ``sdist-urllib3-1.10.4``: its own ``test/test_response.py`` fails with an ``ImportError``
  four modules deep (``urllib3`` -> ``connectionpool`` -> ``response`` -> ``_collections``:
  ``from collections import Mapping``).
* ``py-kombu-3.0.37-import``: the kombu 3.0.37 sdist (301 files); importing its redis transport,
  as a worker does at start-up, raises ``SyntaxError``: ``async`` became a keyword in 3.7 and
  ``kombu/transport/redis.py`` still names a parameter ``async``.
* ``py-networkx-2.1-import``: the networkx 2.1 sdist (676 files); a script that builds a graph
  fails at ``import networkx``: ``classes/graph.py`` does ``from collections import Mapping``.
* ``py-pyyaml-3.12-tests``: PyYAML 3.12's own constructor tests (``tests/lib3``, run against
  ``lib3``) error at run time, not at import: ``construct_mapping`` checks
  ``isinstance(key, collections.Hashable)``, an alias removed from ``collections``.
* ``py-mock-1.0.1-tests``: mock 1.0.1's own ``tests.testhelpers`` error at run time (27 of 57):
  building an autospec signature calls ``inspect.formatargspec``, removed in Python 3.11.
* ``py-werkzeug-0.11.15-flaky``: an app's check that a GET-only route answers POST with
  ``405`` and ``Allow: GET, HEAD``; werkzeug 0.11.15's ``MapAdapter.match`` builds the allowed
  methods from a ``set`` of strings, so the order follows the interpreter's hash seed and the
  check fails in about two runs of three (``PYTHONHASHSEED`` is random by default).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from cases import PYTHON, Case
from interesting import Contract
from real_fetch import expert_builder, extract, fetch_sdist_archive

URLLIB3 = ("urllib3", "1.10.4")
KOMBU = ("kombu", "3.0.37")
NETWORKX = ("networkx", "2.1")
PYYAML = ("PyYAML", "3.12")
WERKZEUG = ("Werkzeug", "0.11.15")
MOCK = ("mock", "1.0.1")

PY = shlex.quote(PYTHON)


def _sdist(
    spec: tuple[str, str], cache: Path, extra: dict[str, str] | None = None
) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        extract(fetch_sdist_archive(*spec, cache), root)
        for rel, text in (extra or {}).items():
            (root / rel).write_text(text, "utf-8")

    return build


GRAPH_PY = """\
\"\"\"Shortest delivery route between two depots.\"\"\"
import networkx as nx

roads = nx.Graph()
roads.add_weighted_edges_from([("a", "b", 4), ("b", "c", 1), ("a", "c", 7)])
print(nx.shortest_path(roads, "a", "c", weight="weight"))
"""

WORKER_PY = """\
\"\"\"Start-up of a task worker: load the broker transport named in the settings.\"\"\"
import importlib

BROKER = "redis"
transport = importlib.import_module("kombu.transport." + BROKER)
print("transport ready:", transport.Transport)
"""

TEST_ALLOW_PY = """\
\"\"\"The API's check: a GET-only endpoint answers POST with 405 and lists what it allows.\"\"\"
from werkzeug.exceptions import MethodNotAllowed
from werkzeug.routing import Map, Rule

url_map = Map([Rule("/items", endpoint="items", methods=["GET"])])
adapter = url_map.bind("api.example")
try:
    adapter.match("/items", method="POST")
except MethodNotAllowed as exc:
    allow = dict(exc.get_headers({}))["Allow"]
assert allow == "GET, HEAD", allow
print("ok")
"""


def python_cases(real: Path) -> list[Case]:
    return [
        Case(
            name=f"sdist-{URLLIB3[0]}-{URLLIB3[1]}",
            description=(
                f"{URLLIB3[0]} {URLLIB3[1]} sdist (pip download at run time); its own "
                "test/test_response.py fails on Python 3.11 with an ImportError 4 modules deep"
            ),
            contract=Contract(
                command=f"PYTHONPATH=. {PY} test/test_response.py",
                match=r"ImportError: cannot import name 'Mapping' from 'collections'",
                timeout=30.0,
            ),
            build=_sdist(URLLIB3, real),
            cap_quick=60.0,
            cap_full=240.0,
            kind="python-test",
            **URLLIB3_EXPERT,
        ),
        Case(
            name=f"py-kombu-{KOMBU[1]}-import",
            description=(
                f"kombu {KOMBU[1]} sdist (301 files); a worker's start-up imports the redis "
                "transport, which raises SyntaxError (a parameter named async)"
            ),
            contract=Contract(
                command=f"{PY} worker.py",
                match=r"kombu/transport/redis\.py\", line \d+[\s\S]*SyntaxError: invalid syntax",
                timeout=30.0,
            ),
            build=_sdist(KOMBU, real, {"worker.py": WORKER_PY}),
            cap_full=300.0,
            kind="python-import",
            **KOMBU_EXPERT,
        ),
        Case(
            name=f"py-networkx-{NETWORKX[1]}-import",
            description=(
                f"networkx {NETWORKX[1]} sdist (676 files); a route script fails at import "
                "networkx: classes/graph.py imports Mapping from collections"
            ),
            contract=Contract(
                command=f"{PY} route.py",
                match=r"ImportError: cannot import name 'Mapping' from 'collections'",
                timeout=30.0,
            ),
            build=_sdist(NETWORKX, real, {"route.py": GRAPH_PY}),
            cap_full=300.0,
            kind="python-import",
            **NETWORKX_EXPERT,
        ),
        Case(
            name=f"py-pyyaml-{PYYAML[1]}-tests",
            description=(
                f"PyYAML {PYYAML[1]} sdist (651 files); its own tests/lib3/test_constructor.py "
                "errors at run time: collections.Hashable is gone"
            ),
            contract=Contract(
                command=f"PYTHONPATH=lib3:tests/lib3 {PY} tests/lib3/test_constructor.py",
                match=r"AttributeError: module 'collections' has no attribute 'Hashable'",
                timeout=60.0,
            ),
            build=_sdist(PYYAML, real),
            cap_full=300.0,
            kind="python-test",
            **PYYAML_EXPERT,
        ),
        Case(
            name=f"py-mock-{MOCK[1]}-tests",
            description=(
                f"mock {MOCK[1]} sdist (93 files); its own tests.testhelpers error at run "
                "time: autospec calls inspect.formatargspec, removed in Python 3.11"
            ),
            contract=Contract(
                command=f"{PY} -m unittest tests.testhelpers",
                match=r"AttributeError: module 'inspect' has no attribute 'formatargspec'",
                timeout=30.0,
            ),
            build=_sdist(MOCK, real),
            cap_full=300.0,
            kind="python-test",
            **MOCK_EXPERT,
        ),
        Case(
            name=f"py-werkzeug-{WERKZEUG[1]}-flaky",
            description=(
                f"Werkzeug {WERKZEUG[1]} sdist (290 files) + an app's 405 check; the Allow "
                "header's order follows the hash seed (a set of strings): fails ~2 runs in 3"
            ),
            contract=Contract(
                command=f"{PY} test_allow.py",
                match=r"AssertionError: HEAD, GET",
                timeout=30.0,
            ),
            build=_sdist(WERKZEUG, real, {"test_allow.py": TEST_ALLOW_PY}),
            flaky=True,
            cap_full=300.0,
            kind="python-flaky",
            **WERKZEUG_EXPERT,
        ),
    ]


# -- the hand-made minima ------------------------------------------------------------------------

URLLIB3_EXPERT: dict = {}
KOMBU_EXPERT: dict = {}
NETWORKX_EXPERT: dict = {}
PYYAML_EXPERT: dict = {}
WERKZEUG_EXPERT: dict = {}
MOCK_EXPERT: dict = {}
_ = expert_builder
TORNADO_EXPERT: dict = {"kind": "python-test"}
