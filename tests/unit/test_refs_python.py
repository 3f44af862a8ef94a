"""Python references: absolute/relative imports, __init__ chains, literal module names."""

from __future__ import annotations

import math

from repomin.analysis.refs import RefGraph
from tests.unit._pass_harness import text_tree


def graph(files: dict[str, str], command: str = "python3 main.py") -> RefGraph:
    return RefGraph(text_tree(files), command=command)


def test_absolute_relative_and_init_chains() -> None:
    files = {
        "main.py": "import pkg.sub.leaf\nfrom pkg import other\n",
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from . import helper\n",
        "pkg/sub/helper.py": "from ..other import thing\n",
        "pkg/sub/leaf.py": "from .helper import x\n",
        "pkg/other.py": "thing = 1\n",
        "pkg/unused.py": "import os\n",
    }
    g = graph(files)
    assert g.unreachable() == ["pkg/unused.py"]
    assert g.edges("pkg/sub/leaf.py") >= {"pkg/sub/helper.py", "pkg/sub/__init__.py"}
    assert g.distances()["pkg/unused.py"] == math.inf


def test_literal_dynamic_imports_and_plain_word_literals() -> None:
    files = {
        "main.py": "import importlib\nimportlib.import_module('plugins.one')\n"
        "__import__('two')\nNAME = 'three'\n",
        "plugins/one.py": "",
        "two.py": "",
        "three.py": "",
        "sub/three.py": "",
        "four.py": "",
    }
    # 'three' is a word beside main.py; sub/three.py is not reached by a plain word.
    assert graph(files).unreachable() == ["four.py", "sub/three.py"]


def test_computed_import_is_conservative_within_its_package() -> None:
    files = {
        "main.py": "import pkg.loader\n",
        "pkg/__init__.py": "",
        "pkg/loader.py": "import importlib\ndef load(n):\n    return importlib.import_module(n)\n",
        "pkg/plugin_a.py": "",
        "pkg/deep/plugin_b.py": "",
        "elsewhere.py": "",
    }
    assert graph(files).unreachable() == ["elsewhere.py"]


def test_unparsable_file_is_read_by_tokens() -> None:
    files = {
        "main.py": "import helper\nprint 'python 2'\nfrom pkg.mod import x\n",
        "helper.py": "",
        "pkg/__init__.py": "",
        "pkg/mod.py": "",
        "dead.py": "",
    }
    assert graph(files).unreachable() == ["dead.py"]


def test_cycles_and_missing_modules() -> None:
    files = {
        "main.py": "import a\nimport not_there\nfrom missing.pkg import y\n",
        "a.py": "import b\n",
        "b.py": "import a\n",
        "c.py": "import d\n",
        "d.py": "import c\n",
    }
    assert graph(files).unreachable() == ["c.py", "d.py"]


def test_dash_m_modules_main_and_unittest_names() -> None:
    files = {
        "tool/__init__.py": "",
        "tool/__main__.py": "from tool import core\n",
        "tool/core.py": "",
        "tool/test/__init__.py": "",
        "tool/test/test_x.py": "import tool.core\n",
        "tool/dead.py": "",
    }
    g = graph(files, "python3 -m tool")
    assert "tool/__main__.py" in g.roots
    assert g.unreachable() == ["tool/dead.py", "tool/test/__init__.py", "tool/test/test_x.py"]
    g = graph(files, "python3 -m unittest tool.test.test_x")
    assert g.unreachable() == ["tool/__main__.py", "tool/dead.py"]


def test_pytest_discovers_test_files_under_named_directories() -> None:
    files = {
        "tests/test_a.py": "import lib\n",
        "tests/conftest.py": "",
        "other/test_b.py": "import dead\n",
        "lib.py": "",
        "dead.py": "",
    }
    g = graph(files, "python3 -m pytest -x tests")
    assert g.unreachable() == ["dead.py", "other/test_b.py"]


def test_namespace_packages_and_src_layout() -> None:
    files = {
        "main.py": "import ns.mod\nimport pkg\n",
        "ns/mod.py": "",
        "src/pkg/__init__.py": "from pkg import inner\n",
        "src/pkg/inner.py": "",
        "src/pkg/dead.py": "",
    }
    assert graph(files).unreachable() == ["src/pkg/dead.py"]


def test_pytest_configs_reach_the_plugins_they_load() -> None:
    tree = text_tree(
        {
            "pytest.ini": "[pytest]\naddopts = -p myplugins.timing -p no:cacheprovider\n",
            "setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -phelpers.fix\n",
            "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p tomlplug"\n',
            "tox.ini": "[pytest]\naddopts = --strict-markers -p=toxplug\n",
            "myplugins/__init__.py": "",
            "myplugins/timing.py": "",
            "helpers/__init__.py": "",
            "helpers/fix.py": "",
            "tomlplug.py": "",
            "toxplug.py": "",
            "cacheprovider.py": "",
            "unrelated.py": "",
            "tests/test_a.py": "def test_a(timing): pass\n",
        }
    )
    g = RefGraph(tree, command="python -m pytest tests")
    assert g.edges("pytest.ini") == {"myplugins/__init__.py", "myplugins/timing.py"}
    assert g.edges("setup.cfg") == {"helpers/__init__.py", "helpers/fix.py"}
    assert g.edges("pyproject.toml") == {"tomlplug.py"}
    assert g.edges("tox.ini") == {"toxplug.py"}
    assert "cacheprovider.py" not in g.reachable and "unrelated.py" not in g.reachable
    assert {"myplugins/timing.py", "tomlplug.py", "toxplug.py"} <= g.reachable
