"""The Java exception signature, on real outputs of a program compiled with javac in tmp_path."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.java_exc import FRAMES_COMPARED, JavaExceptionMode, normalise_method
from repomin.runners.base import Outcome

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "signatures" / "java"
MODE = JavaExceptionMode()


def run(workdir: Path, *argv: str) -> Outcome:
    proc = subprocess.run(list(argv), cwd=workdir, capture_output=True, timeout=60, check=False)
    rc = proc.returncode
    return Outcome(
        exit_code=rc,
        stdout=proc.stdout,
        stderr=proc.stderr,
        signal=-rc if rc < 0 else None,
        workdir=str(workdir),
    )


def pasted(text: str) -> Outcome:
    return Outcome(exit_code=1, stdout=text.encode())


def extract(outcome: Outcome) -> dict[str, Any]:
    sig = MODE.extract(outcome)
    assert sig is not None, outcome.output
    assert json.loads(json.dumps(sig)) == sig
    return sig


def methods(entry: dict[str, Any]) -> list[str]:
    return [frame["method"] for frame in entry["frames"]]


@pytest.fixture(scope="module")
def java_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Compile the fixture once and run it three times (javac and JVM start-up are slow)."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("javac/java not on PATH: the Java signature tests compile and run a program")
    root = tmp_path_factory.mktemp("sigjava")
    shutil.copytree(FIXTURE, root / "src")
    subprocess.run(
        [javac, "-d", str(root / "classes"), str(root / "src" / "demo" / "App.java")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    classes = str(root / "classes")
    return {
        "chain": run(root, java, "-cp", classes, "demo.App", "chain"),
        "chain-again": run(root, java, "-cp", classes, "demo.App", "chain"),
        "npe": run(root, java, "-cp", classes, "demo.App", "npe"),
    }


@pytest.mark.java
def test_caused_by_chain_with_suppressed_and_more(java_runs: dict[str, Outcome]) -> None:
    sig = extract(java_runs["chain"])
    assert sig["kind"] == "java_exception"
    assert (sig["exception_class"], sig["message"]) == (
        "java.lang.UnsupportedOperationException",
        "top",
    )
    assert methods(sig) == ["demo.App.middle", "demo.App.main"]
    wrapper, root = sig["caused_by"]
    assert (wrapper["exception_class"], wrapper["message"]) == (
        "java.lang.RuntimeException",
        "wrapped",
    )
    # "... 2 more" is restored from the enclosing trace.
    assert methods(wrapper) == ["demo.App.wrap", "demo.App.middle", "demo.App.main"]
    assert root["exception_class"] == "java.lang.IllegalStateException"
    assert root["message"] == "inner state at java.lang.Object@<hash>"
    assert methods(root) == ["demo.App.inner", "demo.App.wrap", "demo.App.middle", "demo.App.main"]
    assert sig["suppressed"] == [
        {"exception_class": "java.lang.IllegalArgumentException", "message": "suppressed"}
    ]
    assert sig["root_cause"] == {
        "exception_class": "java.lang.IllegalStateException",
        "message": "inner state at java.lang.Object@<hash>",
    }
    assert sig == extract(java_runs["chain-again"])


@pytest.mark.java
def test_helpful_npe_and_lambda_frames(java_runs: dict[str, Outcome]) -> None:
    sig = extract(java_runs["npe"])
    assert sig["exception_class"] == "java.lang.NullPointerException"
    assert sig["message"].startswith('Cannot invoke "java.lang.Integer.intValue()"')
    assert methods(sig) == ["demo.App.lookup", "demo.App.lambda$main$<n>", "demo.App.main"]
    assert sig["caused_by"] == []
    assert not MODE.matches(extract(java_runs["chain"]), sig)


def surefire(trace: str) -> str:
    """A real trace as Maven Surefire reports it: bare header, [ERROR] lines, colours."""
    body = trace.replace('Exception in thread "main" ', "")
    return (
        "[\x1b[1;34mINFO\x1b[m] Running demo.AppTest\n"
        "[\x1b[1;31mERROR\x1b[m] Tests run: 1, Failures: 0, Errors: 1, Skipped: 0, "
        "Time elapsed: 0.031 s <<< FAILURE! -- in demo.AppTest\n"
        "[\x1b[1;31mERROR\x1b[m] demo.AppTest.testChain -- Time elapsed: 0.01 s <<< ERROR!\n"
        f"{body}\n"
        "[INFO]\n[ERROR] Errors:\n[ERROR]   AppTest.testChain:12 » UnsupportedOperation top\n"
        "[ERROR] Tests run: 1, Failures: 0, Errors: 1, Skipped: 0\n"
    )


MAVEN_TRACE = (
    "org.apache.maven.lifecycle.LifecycleExecutionException: Failed to execute goal\n"
    "\tat org.apache.maven.lifecycle.internal.MojoExecutor.doExecute(MojoExecutor.java:333)\n"
    "Caused by: org.apache.maven.plugin.MojoFailureException: There are test failures.\n"
    "\tat org.apache.maven.plugin.surefire.SurefireHelper.throwException(SurefireHelper.java:1)\n"
)


@pytest.mark.java
def test_surefire_report_of_the_same_failure_matches(java_runs: dict[str, Outcome]) -> None:
    pinned = extract(java_runs["chain"])
    report = surefire(java_runs["chain"].stderr.decode())
    observed = extract(pasted(report + MAVEN_TRACE))
    assert observed == pinned
    contract = FailureContract(FailureSpec(java_exception=True)).learn(
        [java_runs["chain"], java_runs["chain-again"]]
    )
    assert contract.reproduces(pasted(report))
    assert not contract.reproduces(java_runs["npe"])


@pytest.mark.java
def test_identity_is_the_root_cause(java_runs: dict[str, Outcome]) -> None:
    pinned = extract(java_runs["chain"])
    root = pinned["caused_by"][-1]
    unwrapped = (
        'Exception in thread "main" java.lang.reflect.InvocationTargetException\n'
        "\tat jdk.internal.reflect.GeneratedMethodAccessor7.invoke(Unknown Source)\n"
        f"Caused by: {root['exception_class']}: inner state at java.lang.Object@1b2c3d\n"
        + "".join(f"\tat {method}(App.java:1)\n" for method in methods(root)[:FRAMES_COMPARED])
    )
    observed = extract(pasted(unwrapped))
    assert observed["exception_class"] != pinned["exception_class"]
    assert MODE.matches(pinned, observed)
    other_root = dict(observed, caused_by=[dict(observed["caused_by"][0], message="other")])
    assert not MODE.matches(pinned, other_root)
    other_frames = dict(
        observed,
        caused_by=[dict(observed["caused_by"][0], frames=[{"method": "demo.App.main"}])],
    )
    assert not MODE.matches(pinned, other_frames)


@pytest.mark.java
def test_timeouts_never_have_a_signature(java_runs: dict[str, Outcome]) -> None:
    real = java_runs["chain"]
    assert MODE.extract(Outcome(exit_code=1, stderr=real.stderr, timed_out=True)) is None
    assert MODE.extract(Outcome(exit_code=137, stderr=real.stderr, resource_exhausted=True)) is None


# --- pasted outputs --------------------------------------------------------------------------


def test_junit4_multiline_message_and_common_frames_omitted() -> None:
    text = (
        "There was 1 failure:\n1) testX(demo.AppTest)\n"
        "java.lang.AssertionError: expected:<1>\n but was:<2>\n"
        "\tat org.junit.Assert.fail(Assert.java:89)\n"
        "\tat demo.AppTest.testX(AppTest.java:12)\n"
        "Caused by: java.io.UncheckedIOException: read /tmp/tmpab12cd34/x.bin failed\n"
        "\tat demo.Io.read(Io.java:5)\n"
        "\t... 1 common frames omitted\n"
        "FAILURES!!!\nTests run: 1,  Failures: 1\n"
    )
    sig = extract(pasted(text))
    assert (sig["exception_class"], sig["message"]) == ("java.lang.AssertionError", "expected:<1>")
    (cause,) = sig["caused_by"]
    assert cause["message"] == "read <tmp>/x.bin failed"
    assert methods(cause) == ["demo.Io.read", "demo.AppTest.testX"]


def test_junit5_console_launcher() -> None:
    text = (
        "Failures (1):\n  JUnit Jupiter:AppTest:testX()\n"
        "    MethodSource [className = 'demo.AppTest', methodName = 'testX']\n"
        "    => java.lang.IllegalStateException: boom\n"
        "       demo.App.run(App.java:10)\n"
        "       demo.AppTest.testX(AppTest.java:12)\n"
        "       java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
        "\nTest run finished after 64 ms\n"
    )
    sig = extract(pasted(text))
    assert sig["exception_class"] == "java.lang.IllegalStateException"
    assert methods(sig) == [
        "demo.App.run",
        "demo.AppTest.testX",
        "jdk.internal.reflect.NativeMethodAccessorImpl.invoke0",
    ]


def test_only_build_tool_traces_still_give_a_signature() -> None:
    sig = extract(pasted(MAVEN_TRACE))
    assert sig["root_cause"]["exception_class"] == "org.apache.maven.plugin.MojoFailureException"


def test_no_trace_no_signature() -> None:
    for text in (
        "",
        "BUILD SUCCESS\n",
        "java.lang.IllegalStateException: alone\n",
        "\tat a.B.c(B.java:1)\n",
    ):
        assert MODE.extract(pasted(text)) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("java.base/java.util.HashMap.get", "java.util.HashMap.get"),
        ("app//demo.App.main", "demo.App.main"),
        ("com.foo@1.2.3/com.foo.Bar.baz", "com.foo.Bar.baz"),
        ("demo.App$$Lambda$14/0x0000000800c03000.get", "demo.App$$Lambda.get"),
        ("demo.App$$Lambda/0x000071b3a4003a00.get", "demo.App$$Lambda.get"),
        (
            "jdk.internal.reflect.GeneratedMethodAccessor12.invoke",
            "jdk.internal.reflect.GeneratedMethodAccessor<n>.invoke",
        ),
        ("demo.App$1.run", "demo.App$<n>.run"),
        ("demo.App$Inner.<init>", "demo.App$Inner.<init>"),
    ],
)
def test_method_normalisation(raw: str, expected: str) -> None:
    assert normalise_method(raw) == expected
