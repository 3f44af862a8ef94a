"""The Python exception signature, on real outputs of Python and pytest runs made in tmp_path."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.errors import SignatureError
from repomin.failure.contract import FailureContract, FailureSpec, signature_mode_for
from repomin.failure.normalise import Normaliser
from repomin.failure.python_exc import FRAMES_COMPARED, PythonExceptionMode
from repomin.failure.python_parse import parse_exceptions
from repomin.failure.signatures import SIGNATURE_MODES
from repomin.runners.base import Outcome

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "signatures" / "python"
MODE = PythonExceptionMode()

GENERATED_TEST = """\
from pkg.mod import process


def helper():
    return process({}, " x ")


def test_lookup():
    helper()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def run(workdir: Path, *argv: str) -> Outcome:
    proc = subprocess.run(
        list(argv), cwd=workdir, capture_output=True, timeout=60, env=_env(), check=False
    )
    rc = proc.returncode
    return Outcome(
        exit_code=rc,
        stdout=proc.stdout,
        stderr=proc.stderr,
        signal=-rc if rc < 0 else None,
        workdir=str(workdir),
    )


def python(workdir: Path, *args: str) -> Outcome:
    return run(workdir, sys.executable, *args)


def pytest_run(workdir: Path, *args: str) -> Outcome:
    return python(workdir, "-m", "pytest", "-p", "no:cacheprovider", *args)


def copy_tree(root: Path, name: str = "tree") -> Path:
    dest = root / name
    shutil.copytree(FIXTURE, dest)
    return dest


def extract(outcome: Outcome) -> dict[str, Any]:
    sig = MODE.extract(outcome)
    assert sig is not None, outcome.output
    return sig


def frames(sig: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["file"], f["function"]) for f in sig["frames"]]


INNERMOST = [("pkg/mod.py", "process"), ("pkg/mod.py", "normalise"), ("pkg/mod.py", "lookup")]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One read-only copy of the fixture project (tests that edit it make their own)."""
    return copy_tree(tmp_path_factory.mktemp("sigpy"))


@pytest.fixture(scope="module")
def pinned(tree: Path) -> dict[str, Any]:
    """The signature of the full program's KeyError, as a baseline would pin it."""
    return extract(python(tree, "main.py", "lookup"))


def test_registry_holds_the_three_modes() -> None:
    assert set(SIGNATURE_MODES) == {"python_exception", "java_exception", "process_failure"}
    for flag, mode in SIGNATURE_MODES.items():
        assert mode.flag == flag
        assert mode.report_field == f"{flag}_signature"
        assert signature_mode_for(flag) is mode


def test_plain_traceback(tree: Path, pinned: dict[str, Any]) -> None:
    assert pinned["kind"] == "python_exception"
    assert pinned["exception_class"] == "KeyError"
    assert pinned["message"] == "'x'"
    assert frames(pinned) == [
        ("main.py", "<module>"),
        ("app/runner.py", "run"),
        ("app/runner.py", "dispatch"),
        *INNERMOST,
    ]
    assert pinned["chain"] == [] and pinned["group"] == []
    assert str(tree) not in json.dumps(pinned)
    assert json.loads(json.dumps(pinned)) == pinned


def test_explicit_chain_is_stable_across_workdirs_and_addresses(tmp_path: Path) -> None:
    first = python(copy_tree(tmp_path, "a"), "main.py", "explicit_chain")
    second = python(copy_tree(tmp_path, "b"), "main.py", "explicit_chain")
    assert first.output != second.output  # different paths, addresses and ids
    sig = extract(first)
    assert sig == extract(second)
    assert sig["exception_class"] == "pkg.mod.LookupFailedError"
    assert sig["message"] == "wrapped <object object at 0x<hex>> id=<n>"
    assert sig["chain"] == [{"exception_class": "KeyError", "message": "'x'", "link": "cause"}]
    assert frames(sig)[-1] == ("pkg/mod.py", "explicit_chain")
    assert MODE.matches(sig, extract(second))


def test_implicit_chain_records_the_context(tree: Path) -> None:
    sig = extract(python(tree, "main.py", "implicit_chain"))
    assert sig["exception_class"] == "ValueError"
    assert sig["chain"] == [{"exception_class": "KeyError", "message": "'x'", "link": "context"}]


def test_reduction_that_keeps_innermost_frames_still_matches(
    tree: Path, pinned: dict[str, Any]
) -> None:
    reduced = extract(python(tree, "main_direct.py"))
    assert frames(reduced) != frames(pinned)
    assert frames(reduced)[-FRAMES_COMPARED:] == INNERMOST
    assert MODE.matches(pinned, reduced)

    too_far = extract(python(tree, "-c", "from pkg.mod import lookup; lookup({}, 'x')"))
    assert (too_far["exception_class"], too_far["message"]) == ("KeyError", "'x'")
    assert not MODE.matches(pinned, too_far)


def test_deleting_the_module_turns_the_failure_into_an_import_error(
    tmp_path: Path, pinned: dict[str, Any]
) -> None:
    tree = copy_tree(tmp_path)
    (tree / "pkg" / "mod.py").unlink()
    broken = extract(python(tree, "main.py", "lookup"))
    assert broken["exception_class"] == "ImportError"
    assert not MODE.matches(pinned, broken)
    shutil.rmtree(tree / "pkg")
    missing = extract(python(tree, "main.py", "lookup"))
    assert missing["exception_class"] == "ModuleNotFoundError"
    assert missing["message"] == "No module named 'pkg'"
    assert not MODE.matches(pinned, missing)


frame_lists = st.lists(
    st.fixed_dictionaries(
        {"file": st.sampled_from(["a.py", "pkg/mod.py"]), "function": st.sampled_from("fgh")}
    ),
    max_size=5,
)


@settings(max_examples=40, deadline=None)
@given(frames=frame_lists, message=st.text(max_size=20))
def test_an_import_error_never_matches_a_key_error(
    frames: list[dict[str, str]], message: str
) -> None:
    def sig(cls: str) -> dict[str, Any]:
        return {
            "kind": "python_exception",
            "exception_class": cls,
            "message": message,
            "frames": frames,
            "chain": [],
            "group": [],
        }

    for other in ("ImportError", "ModuleNotFoundError"):
        assert not MODE.matches(sig("KeyError"), sig(other))
        assert not MODE.matches(sig(other), sig("KeyError"))
    assert MODE.matches(sig("KeyError"), sig("KeyError"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "innermost"),
    [
        (["--tb=long", "--color=yes"], INNERMOST),
        (["--tb=short"], INNERMOST),
        (["--tb=native"], INNERMOST),
        (["--tb=line"], [("pkg/mod.py", "")]),
        (["--tb=no"], [("tests/test_lookup.py", "test_lookup")]),
    ],
    ids=["long-colour", "short", "native", "line", "summary-only"],
)
def test_pytest_report_formats(
    tree: Path,
    pinned: dict[str, Any],
    options: list[str],
    innermost: list[tuple[str, str]],
    tmp_path: Path,
) -> None:
    work = copy_tree(tmp_path)
    (work / "tests").mkdir()
    (work / "tests" / "test_lookup.py").write_text(GENERATED_TEST)
    outcome = pytest_run(work, *options, "tests/test_lookup.py")
    assert outcome.exit_code == 1, outcome.output
    sig = extract(outcome)
    assert (sig["exception_class"], sig["message"]) == ("KeyError", "'x'")
    assert frames(sig)[-len(innermost) :] == innermost
    # The full formats carry enough frames to match the plain run's signature.
    assert MODE.matches(pinned, sig) == (len(innermost) >= FRAMES_COMPARED)


@pytest.mark.slow
def test_pytest_collection_error(tmp_path: Path) -> None:
    work = copy_tree(tmp_path)
    (work / "tests").mkdir()
    (work / "tests" / "test_lookup.py").write_text(GENERATED_TEST)
    shutil.rmtree(work / "pkg")
    sig = extract(pytest_run(work, "tests/test_lookup.py"))
    assert sig["exception_class"] == "ModuleNotFoundError"
    assert sig["message"] == "No module named 'pkg'"
    assert frames(sig)[-1] == ("tests/test_lookup.py", "<module>")


@pytest.mark.slow
def test_pytest_captured_output_does_not_hide_the_failure(tmp_path: Path) -> None:
    (tmp_path / "test_logged.py").write_text(
        "import logging\n\n\n"
        "def double(x):\n    return 2 * x\n\n\n"
        "def test_logged():\n"
        "    try:\n        {}['q']\n    except KeyError:\n"
        "        logging.exception('handled')\n"
        "    print('Traceback (most recent call last):')\n"
        "    print('OSError: printed noise')\n"
        "    assert double(1) == 3\n"
    )
    sig = extract(pytest_run(tmp_path, "test_logged.py"))
    assert sig["exception_class"] == "AssertionError"
    assert sig["message"] == "assert 2 == 3"
    assert frames(sig) == [("test_logged.py", "test_logged")]


def test_unittest_report(tmp_path: Path, pinned: dict[str, Any]) -> None:
    work = copy_tree(tmp_path)
    (work / "test_lookup.py").write_text(
        GENERATED_TEST.replace("def test_lookup():\n    helper()", "")
        + "\nimport unittest\n\n\nclass LookupTest(unittest.TestCase):\n"
        "    def test_lookup(self):\n        helper()\n"
    )
    outcome = python(work, "-m", "unittest", "test_lookup")
    assert "Ran 1 test" in outcome.output and outcome.exit_code == 1
    sig = extract(outcome)
    assert frames(sig)[-4:] == [("test_lookup.py", "helper"), *INNERMOST]
    assert MODE.matches(pinned, sig)


@pytest.mark.parametrize("importer", [False, True], ids=["script", "imported"])
def test_syntax_error_ignores_position(tmp_path: Path, importer: bool) -> None:
    sigs = []
    for name, source in (("a", "def f(:\n"), ("b", "\n\nx = 1\n\n\ndef f(   :\n    pass\n")):
        work = tmp_path / name
        work.mkdir()
        (work / "bad.py").write_text(source)
        argv = ("-c", "import bad") if importer else ("bad.py",)
        sigs.append(extract(python(work, *argv)))
    assert sigs[0]["exception_class"] == "SyntaxError"
    assert sigs[0]["message"] == "invalid syntax"
    assert frames(sigs[0])[-1] == ("bad.py", "")
    assert sigs[0] == sigs[1]


def test_exception_group_members_are_part_of_the_identity(tree: Path) -> None:
    sig = extract(python(tree, "main.py", "group"))
    assert sig["exception_class"] == "ExceptionGroup"
    assert sig["message"] == "several (2 sub-exceptions)"
    assert sig["group"] == [
        {"exception_class": "KeyError", "message": "'b'"},
        {"exception_class": "ValueError", "message": "a"},
    ]
    assert frames(sig)[-1] == ("pkg/mod.py", "group")
    other = extract(python(tree, "main.py", "other_group"))
    assert other["message"] == sig["message"]
    assert not MODE.matches(sig, other)


def test_nested_exception_group_in_a_chain(tmp_path: Path) -> None:
    (tmp_path / "nested.py").write_text(
        "def a():\n    raise ValueError('a')\n\n\n"
        "def inner():\n    raise ExceptionGroup('inner', [TypeError('t')])\n\n\n"
        "def main():\n"
        "    try:\n        {}['k']\n    except KeyError:\n        errors = []\n"
        "        for f in (a, inner):\n"
        "            try:\n                f()\n            except Exception as e:\n"
        "                errors.append(e)\n"
        "        raise ExceptionGroup('outer', errors)\n\n\n"
        "main()\n"
    )
    sig = extract(python(tmp_path, "nested.py"))
    assert (sig["exception_class"], sig["message"]) == (
        "ExceptionGroup",
        "outer (2 sub-exceptions)",
    )
    assert sig["group"] == [
        {"exception_class": "ExceptionGroup", "message": "inner (1 sub-exception)"},
        {"exception_class": "ValueError", "message": "a"},
    ]
    assert sig["chain"] == [{"exception_class": "KeyError", "message": "'k'", "link": "context"}]
    assert frames(sig) == [("nested.py", "<module>"), ("nested.py", "main")]


def test_timeouts_and_exhaustion_never_have_a_signature(tree: Path) -> None:
    real = python(tree, "main.py", "lookup")
    for flags in ({"timed_out": True}, {"resource_exhausted": True}):
        outcome = Outcome(
            exit_code=real.exit_code,
            stdout=real.stdout,
            stderr=real.stderr,
            workdir=real.workdir,
            **flags,  # type: ignore[arg-type]
        )
        assert MODE.extract(outcome) is None
    assert MODE.extract(python(tree, "-c", "print('fine')")) is None


def test_contract_learns_once_and_rejects_a_different_failure(tmp_path: Path, tree: Path) -> None:
    baseline = [python(copy_tree(tmp_path, f"b{i}"), "main.py", "lookup") for i in range(2)]
    contract = FailureContract(FailureSpec(python_exception=True)).learn(baseline)
    assert contract.signature is not None
    assert contract.signature["exception_class"] == "KeyError"
    assert contract.reproduces(python(tree, "main_direct.py"))
    assert not contract.reproduces(python(tree, "main.py", "implicit_chain"))
    with pytest.raises(SignatureError, match="disagree"):
        FailureContract(FailureSpec(python_exception=True)).learn(
            [baseline[0], python(tree, "main.py", "implicit_chain")]
        )


def test_matching_is_pure(pinned: dict[str, Any]) -> None:
    observed = copy.deepcopy(pinned)
    observed["frames"] = observed["frames"][-FRAMES_COMPARED:]
    before = (copy.deepcopy(pinned), copy.deepcopy(observed))
    results = {MODE.matches(pinned, observed) for _ in range(3)}
    assert results == {True}
    assert (pinned, observed) == before


# --- pasted outputs and the normalisation rules -------------------------------------------


def test_the_last_traceback_wins() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/a.py", line 1, in <module>\n'
        "OSError: first\n"
        "some log line\n"
        "Traceback (most recent call last):\n"
        '  File "/w/b.py", line 3, in g\n'
        "    g()\n"
        "RuntimeError: second\n"
    )
    sig = extract(Outcome(exit_code=1, stderr=text.encode(), workdir="/w"))
    assert (sig["exception_class"], sig["message"], sig["chain"]) == ("RuntimeError", "second", [])
    assert frames(sig) == [("b.py", "g")]


def test_pytest_summary_node_ids() -> None:
    text = "FAILED tests/test_a.py::TestA::test_x[1-2] - pkg.Error: boom at 0x7f00deadbeef\n"
    (record,) = parse_exceptions(text)
    assert (record.exception_class, record.message) == ("pkg.Error", "boom at 0x7f00deadbeef")
    assert [(f.file, f.function) for f in record.frames] == [("tests/test_a.py", "test_x")]
    sig = extract(Outcome(exit_code=1, stdout=text.encode()))
    assert sig["message"] == "boom at 0x<hex>"


def test_output_without_an_exception_has_no_signature() -> None:
    for text in ("", "all good\n", "Traceback (most recent call last):\n  truncated", "E  x"):
        assert MODE.extract(Outcome(exit_code=1, stdout=text.encode())) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<Foo object at 0x7fb186bfa050>", "<Foo object at 0x<hex>>"),
        ("flags 0xff", "flags 0xff"),
        ("file '/tmp/pytest-of-root/pytest-3/test_x0/conf.yaml'", "file '<tmp>/conf.yaml'"),
        ("dir /tmp/tmpab12_cd9 gone", "dir <tmp>/<tmpname> gone"),
        ("id 3f2504e0-4f89-11d3-9a0c-0305e82c3301.", "id <uuid>."),
        ("pid 123456 port 80", "pid <n> port 80"),
        ("demo.Thing@6b95977 broke", "demo.Thing@<hash> broke"),
        ("sha 0123456789abcdef0123", "sha <hex>"),
        ("  two\n  lines\t", "two lines"),
        ("C:\\Users\\me\\AppData\\Local\\Temp\\x1\\f.txt", "<tmp>\\f.txt"),
    ],
)
def test_message_normalisation(raw: str, expected: str) -> None:
    assert Normaliser().message(raw) == expected


def test_message_normalisation_of_the_workdir(tmp_path: Path) -> None:
    norm = Normaliser.for_outcome(Outcome(exit_code=1, workdir=str(tmp_path)))
    assert norm.message(f"missing {tmp_path}/data/x.csv") == "missing <workdir>/data/x.csv"
    assert len(norm.message("x" * 10_000)) == 500


def test_path_normalisation(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    norm = Normaliser.for_outcome(Outcome(exit_code=1, workdir=str(link)))
    assert norm.path(f"{link}/pkg/mod.py") == "pkg/mod.py"
    assert norm.path(f"{real}/pkg/mod.py") == "pkg/mod.py"
    assert norm.path("/usr/lib/python3.11/site-packages/_pytest/runner.py") == (
        "<site-packages>/_pytest/runner.py"
    )
    assert norm.path("/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py") == (
        "<stdlib>/json/decoder.py"
    )
    assert norm.path("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>"
    assert norm.path("./pkg/mod.py") == "pkg/mod.py"
    windows = Normaliser(("C:\\work\\tree",))
    assert windows.path("C:\\work\\tree\\pkg\\mod.py") == "pkg/mod.py"
    assert windows.path("C:\\Python311\\Lib\\json\\decoder.py") == "<stdlib>/json/decoder.py"
    container = Outcome(exit_code=1, workdir=str(real), extra={"container_workdir": "/src"})
    assert Normaliser.for_outcome(container).path("/src/pkg/mod.py") == "pkg/mod.py"
