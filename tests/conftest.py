"""Shared test setup: a fixed foo_sim environment and a subprocess runner."""

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

# Tests exercise the installed package, never the source tree beside them:
# the checkout's torch_foo/ has no compiled extension.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

# Every test process sees the same simulated machine, whatever the
# developer's shell has set; tests that need another one use run_python.
FOO_SIM_DEFAULTS = {
    "FOO_SIM_DEVICE_COUNT": "2",
    "FOO_SIM_DEVICE_MEMORY": "8GiB",
    "FOO_SIM_DEVICE_EXECUTORS": "4",
    "FOO_SIM_LAUNCH_BLOCKING": "0",
    "FOO_SIM_LAUNCH_DELAY_US": "0",
    "FOO_SIM_COPY_THREADS": "2",
    # tests/test_race_clean.py reruns test files with the race detector on
    # (FOO_TEST_RACE_CHECK=1) and fails on any report.
    "FOO_SIM_RACE_CHECK": os.environ.get("FOO_TEST_RACE_CHECK", "0"),
}
os.environ.update(FOO_SIM_DEFAULTS)
os.environ.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)

# pytest-xdist's workers (-n auto: one per core) keep the cores busy
# already; each worker, and the children it starts, gets its share of them
# as intra-op threads. With every worker at torch's default (all cores),
# the OpenMP threads outnumber the cores, an OpenMP parallel region waits
# for a thread that has no core, and on a loaded 2-core machine a small
# transformer's training step took 15 times as long. Tests about thread
# teams set their own counts (tests/test_openmp_teams.py). Set before torch
# is imported: OpenMP reads it when torch starts its first team.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = str(_share)


# Prepended to a child's code during a race-checked run: at exit, its
# reports go where the parent test's would, named after the parent test.
_RACE_REPORTS_AT_EXIT = """\
import atexit as _race_atexit


def _race_dump():
    import json, os, sys
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "foo"):
        return
    found = torch.foo.race_reports()
    if found:
        with open(os.environ["FOO_TEST_RACE_REPORTS"] + f".{os.getpid()}", "a") as f:
            for r in found:
                f.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "?") + " (child)",
                                    "message": r["message"]}) + "\\n")


_race_atexit.register(_race_dump)
"""


def run_python(code: str, env: dict | None = None, timeout: float = 120, script: str | None = None) -> str:
    """Runs ``code`` in a fresh interpreter and returns its stdout; fails on a non-zero exit.

    With ``script`` (a file path) the code is written there and run as a file,
    which multiprocessing's spawn method needs to re-import the main module.
    """
    code = textwrap.dedent(code)
    if os.environ.get("FOO_TEST_RACE_CHECK", "0") != "0" and os.environ.get("FOO_TEST_RACE_REPORTS"):
        code = _RACE_REPORTS_AT_EXIT + code  # the child's races count too (tests/test_race_clean.py)
    if script is not None:
        with open(script, "w") as f:
            f.write(code)
    full_env = dict(os.environ, **FOO_SIM_DEFAULTS)
    full_env.update(env or {})
    full_env = {k: v for k, v in full_env.items() if v is not None}
    # -P and a neutral working directory: import the installed torch_foo.
    result = subprocess.run(
        [sys.executable, "-P", script] if script else [sys.executable, "-P", "-c", code],
        capture_output=True, text=True, timeout=timeout, env=full_env, cwd=os.path.dirname(_ROOT),
    )
    assert result.returncode == 0, f"child failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result.stdout


def run_python_json(code: str, env: dict | None = None, timeout: float = 120):
    """Like run_python, for a child whose last line of output is JSON."""
    return json.loads(run_python(code, env, timeout).strip().splitlines()[-1])


@pytest.fixture
def foo():
    """torch.foo, with the current device and streams reset after the test."""
    import torch

    yield torch.foo
    torch.foo.synchronize(0)
    torch.foo.synchronize(1)
    torch.foo.set_device(0)
    for index in range(torch.foo.device_count()):
        torch.foo.set_stream(torch.foo.default_stream(index))
    torch.foo.set_device(0)


@contextlib.contextmanager
def held_stream():
    """Holds the current foo stream with a gate kernel for the block; yields ``still_held()``.

    Code in the block that returns without waiting for the device finds
    ``still_held()`` true: only the end of the block opens the gate. Code
    that waits for the device would wait for the gate forever; a watchdog
    opens it after ``_GATE_HANG_GUARD_S`` so that such code fails the test
    (``still_held()`` is then false) instead of hanging the suite. It never
    decides a passing test.
    """
    import torch

    gate = torch.foo._gate()
    released_by_watchdog = threading.Event()

    def release():
        released_by_watchdog.set()
        gate.open()

    watchdog = threading.Timer(_GATE_HANG_GUARD_S, release)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield lambda: not released_by_watchdog.is_set()
    finally:
        watchdog.cancel()
        gate.open()


_GATE_HANG_GUARD_S = 120


def pytest_terminal_summary(terminalreporter):
    """Reports the OpInfo sweep's pass rate (tests/test_opinfo.py lists what it leaves out and why)."""
    def count(kind):
        return sum(1 for r in terminalreporter.stats.get(kind, []) if "test_opinfo.py" in getattr(r, "nodeid", ""))

    passed, failed, skipped = count("passed"), count("failed"), count("skipped")
    if passed + failed:
        terminalreporter.write_line(
            f"OpInfo sweep: {passed} of {passed + failed} operators match CPU "
            f"({100 * passed / (passed + failed):.1f}%), {skipped} left out (see EXCLUDED in tests/test_opinfo.py)")


# With the race detector on (tests/test_race_clean.py), each test's new
# reports are written, with the test's id, to $FOO_TEST_RACE_REPORTS.<pid>.
if os.environ.get("FOO_TEST_RACE_CHECK", "0") != "0" and os.environ.get("FOO_TEST_RACE_REPORTS"):

    @pytest.fixture(autouse=True)
    def _race_reports_of_each_test(request):
        import torch

        before = len(torch.foo.race_reports())
        yield
        found = torch.foo.race_reports()[before:]
        if found:
            path = f"{os.environ['FOO_TEST_RACE_REPORTS']}.{os.getpid()}"
            with open(path, "a") as f:
                for r in found:
                    f.write(json.dumps({"test": request.node.nodeid, "message": r["message"]}) + "\n")
