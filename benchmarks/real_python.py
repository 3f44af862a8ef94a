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
  check fails in about two runs of three (``PYTHONHASHSEED`` is random by default). The check
  runs with ``python -S``: a current Werkzeug installed in site-packages builds the header
  from a set too, and must not stand in for the sdist's.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cases import PYTHON, Case, fetch_sdist
from interesting import Contract
from real_fetch import expert_builder, extract

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
        extract(fetch_sdist(*spec, cache), root)
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
                # -S: without site-packages, so that an installed Werkzeug cannot stand in.
                command=f"{PY} -S test_allow.py",
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
# Every file of a minimum holds only text of the unreduced file (lines and parts of lines
# deleted, nothing added); packages whose ``__init__.py`` is not needed become namespace
# packages. ``None`` keeps a file whole.


def _expert(note: str, files: int, size: int, tree: dict[str, str | None]) -> dict[str, Any]:
    return {
        "expert": expert_builder(tree),
        "expert_files": files,
        "expert_bytes": size,
        "expert_note": note,
    }


TORNADO_EXPERT = {
    "kind": "python-test",
    **_expert(
        "the test module's tornado.httputil import line and httputil's "
        "`import collections` + `collections.MutableMapping` (namespace packages)",
        2,
        86,
        {
            "tornado/test/httputil_test.py": "from tornado.httputil import url_concat\n",
            "tornado/httputil.py": "import collections\ncollections.MutableMapping\n",
        },
    ),
}
URLLIB3_EXPERT = _expert(
    "test_response cut to `import urllib3._collections`, _collections' `from collections "
    "import Mapping`, and an empty urllib3/__init__.py (an installed urllib3 would win over a "
    "namespace package); until 2026-12-03 the import chain through response.py (4 files / "
    "115 B), which the reduction then went below",
    3,
    60,
    {
        "test/test_response.py": "import urllib3._collections\n",
        "urllib3/__init__.py": "",
        "urllib3/_collections.py": "from collections import Mapping\n",
    },
)
KOMBU_EXPERT = _expert(
    "worker.py's import_module of kombu.transport.redis and redis.py cut to the `async` "
    "parameter name alone (namespace packages)",
    2,
    93,
    {
        "worker.py": (
            'import importlib\nBROKER = "redis"\n'
            'importlib.import_module("kombu.transport." + BROKER)\n'
        ),
        "kombu/transport/redis.py": "async\n",
    },
)
NETWORKX_EXPERT = _expert(
    "route.py cut to `import networkx.classes.graph`, graph.py's `from collections import "
    "Mapping`, and an empty networkx/__init__.py (an installed networkx would win over a "
    "namespace package); until 2026-12-03 the import chain through the two __init__ files "
    "(4 files / 97 B), which the reduction then went below",
    3,
    62,
    {
        "route.py": "import networkx.classes.graph\n",
        "networkx/__init__.py": "",
        "networkx/classes/graph.py": "from collections import Mapping\n",
    },
)
MOCK_EXPERT = _expert(
    "one erroring test of testhelpers (test_builtins' `create_autospec(1)`, its class on "
    "tests/support's `unittest as unittest2`) and mock.py's `create_autospec` cut to "
    "`inspect.formatargspec()`. Until 2026-12-05 `inspect.formatargspec()` at mock.py's top "
    "level (2 files / 70 B): there unittest's loader fails to import the module, which is "
    "another failure than one of the 27 tests erroring, so it is no minimum of the same failure",
    3,
    282,
    {
        "tests/testhelpers.py": (
            "from tests.support import unittest2\nfrom mock import (\n    create_autospec\n)\n"
            "class SpecSignatureTest(unittest2.TestCase):\n    def test_builtins(self):\n"
            "        create_autospec(1)\n"
        ),
        "tests/support.py": "import unittest as unittest2\n",
        "mock.py": (
            "import inspect\ndef create_autospec(spec):\n        inspect.formatargspec(\n)\n"
        ),
    },
)
PYYAML_EXPERT = _expert(
    "test_constructor cut to one load_all test, test_appliance cut to finding and calling it, "
    "one data line (`Clark : Evans`), yaml/__init__ cut to `from .loader import *` and "
    "load_all; the 11 loader modules kept whole (the Hashable check is in constructor.py)",
    15,
    134920,
    {
        "tests/lib3/test_constructor.py": (
            "import yaml\n"
            "def test_constructor_types(data_filename):\n"
            "    list(yaml.load_all(open(data_filename, 'rb')))\n"
            "test_constructor_types.unittest = ['.data']\n"
            "if __name__ == '__main__':\n"
            "    import test_appliance\n"
            "    test_appliance.run(globals())\n"
        ),
        "tests/lib3/test_appliance.py": (
            "import os\n"
            "DATA = 'tests/data'\n"
            "def find_test_functions(collection):\n"
            "    functions = []\n"
            "    for key in sorted(collection):\n"
            "        value = collection[key]\n"
            "        if hasattr(value, 'unittest'):\n"
            "            functions.append(value)\n"
            "    return functions\n"
            "def find_test_filenames(directory):\n"
            "    filenames = {}\n"
            "    for filename in os.listdir(directory):\n"
            "        base, ext = os.path.splitext(filename)\n"
            "        filenames.setdefault(base, []).append(ext)\n"
            "    filenames = sorted(filenames.items())\n"
            "    return filenames\n"
            "def execute(function, filenames):\n"
            "    function(*filenames)\n"
            "def run(collections):\n"
            "    test_functions = find_test_functions(collections)\n"
            "    test_filenames = find_test_filenames(DATA)\n"
            "    for function in test_functions:\n"
            "        for base, exts in test_filenames:\n"
            "            filenames = []\n"
            "            for ext in function.unittest:\n"
            "                filenames.append(os.path.join(DATA, base+ext))\n"
            "            execute(function, filenames)\n"
        ),
        "tests/data/construct-map.data": ("Clark : Evans\n"),
        "lib3/yaml/__init__.py": (
            "from .loader import *\n"
            "def load_all(stream, Loader=Loader):\n"
            "    loader = Loader(stream)\n"
            "    while loader.check_data():\n"
            "        yield loader.get_data()\n"
        ),
        "lib3/yaml/composer.py": None,
        "lib3/yaml/constructor.py": None,
        "lib3/yaml/error.py": None,
        "lib3/yaml/events.py": None,
        "lib3/yaml/loader.py": None,
        "lib3/yaml/nodes.py": None,
        "lib3/yaml/parser.py": None,
        "lib3/yaml/reader.py": None,
        "lib3/yaml/resolver.py": None,
        "lib3/yaml/scanner.py": None,
        "lib3/yaml/tokens.py": None,
    },
)
WERKZEUG_EXPERT = _expert(
    "test_allow.py without its docstring, endpoint and print; the 12 werkzeug modules that "
    "routing and exceptions import, kept whole (werkzeug a namespace package)",
    13,
    428237,
    {
        "test_allow.py": (
            "from werkzeug.exceptions import MethodNotAllowed\n"
            "from werkzeug.routing import Map, Rule\n"
            'url_map = Map([Rule("/items", methods=["GET"])])\n'
            'adapter = url_map.bind("api.example")\n'
            "try:\n"
            '    adapter.match("/items", method="POST")\n'
            "except MethodNotAllowed as exc:\n"
            '    allow = dict(exc.get_headers({}))["Allow"]\n'
            'assert allow == "GET, HEAD", allow\n'
        ),
        "werkzeug/_compat.py": None,
        "werkzeug/_internal.py": None,
        "werkzeug/datastructures.py": None,
        "werkzeug/exceptions.py": None,
        "werkzeug/filesystem.py": None,
        "werkzeug/formparser.py": None,
        "werkzeug/http.py": None,
        "werkzeug/routing.py": None,
        "werkzeug/urls.py": None,
        "werkzeug/utils.py": None,
        "werkzeug/wrappers.py": None,
        "werkzeug/wsgi.py": None,
    },
)
