"""End-to-end: a failure raised while a module loads, reached through a plugin loader that
no deletion can shortcut (``importlib.import_module(name)`` with a computed name); the
``shortcut`` pass reads the baseline's traceback and the entry loads that module directly."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.e2e._reduce import reduce_ok, write_tree

FILES = {
    "run.py": (
        "import importlib, json\n"
        "config = json.load(open('plugins.json'))\n"
        "for name in config['plugins']:\n"
        "    importlib.import_module('plugins.' + name)\n"
    ),
    "plugins.json": '{"plugins": ["alpha", "beta"]}\n',
    "plugins/__init__.py": "",
    "plugins/alpha.py": "VALUE = 1\n" * 20,
    "plugins/beta.py": "import plugins.alpha\nfrom collections import Mapping\n" + "X = 2\n" * 20,
}


def test_the_entry_loads_the_failing_module_directly(tmp_path: Path) -> None:
    src, out = write_tree(tmp_path / "repo", FILES), tmp_path / "out"
    report = reduce_ok(src, out, f"{sys.executable} run.py", "cannot import name 'Mapping'")
    shortcut = [e for e in report["events"] if e["phase"] == "shortcut"]
    assert [e["decision"] for e in shortcut] == ["accepted"]
    assert shortcut[0]["description"] == "load plugins/beta.py straight from run.py"
    # the plugin list, the loader and the other plugin are gone; what is left fails at import
    assert not (out / "plugins.json").exists() and not (out / "plugins" / "alpha.py").exists()
    assert (out / "run.py").read_text() == "import plugins.beta\n"
    assert (out / "plugins" / "beta.py").read_text() == "from collections import Mapping\n"
