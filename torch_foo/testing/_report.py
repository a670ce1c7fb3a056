"""The device-agnostic readiness report of ``pytest --foo``: one entry per test
(written with ``--foo-report=PATH``) and a short summary at the end of the run.

It is built where test reports arrive: in the pytest process, or in
pytest-xdist's controller, to which each worker sends a test's data with its
teardown report (``user_properties``).
"""

import json
import os
import re
from collections import Counter
from importlib import metadata

import pytest

# How many operators the terminal summary names in each list.
_SUMMARY_TOP = 5

# A warning that a foo kernel raised on an executor: foo re-raises it on the
# host prefixed with its operator's name ("aten::std: ...").
_KERNEL_WARNING = re.compile(r"^[A-Za-z_]\w*::[\w.]+: ")


def _empty_entry(nodeid: str) -> dict:
    return {"nodeid": nodeid, "outcome": None, "fallback_ops": {}, "host_syncs": {}, "races": [],
            "kernel_warnings": [], "kernel_errors": []}


def _outcome(previous, report: pytest.TestReport):
    """The test's outcome so far, as pytest's summary counts it, after one more phase."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.skipped and xfail:
            return "xfailed"
        if report.passed and xfail:
            return "xpassed"
        return report.outcome
    if report.failed:
        return "failed" if previous == "failed" else "error"
    if report.skipped and previous is None:
        return "skipped"
    return previous


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class FooReport:
    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._path = config.getoption("foo_report")
        self._tests: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self._tests.setdefault(report.nodeid, _empty_entry(report.nodeid))
        entry["outcome"] = _outcome(entry["outcome"], report)
        for name, value in report.user_properties:
            if name == "torch_foo":
                entry.update(value)

    def pytest_warning_recorded(self, warning_message, when, nodeid, location) -> None:
        # pytest hands a test's warnings over once the test is over, after its reports (from an
        # xdist worker too).
        message = str(warning_message.message)
        if when == "runtest" and nodeid and _KERNEL_WARNING.match(message):
            self._tests.setdefault(nodeid, _empty_entry(nodeid))["kernel_warnings"].append(message)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._path is None:
            return
        options = {name: self._config.getoption(name) for name in
                   ("foo_devices", "foo_memory", "foo_strict", "foo_faults")}
        document = {
            "torch_foo": metadata.version("torch_foo"),
            "torch": metadata.version("torch"),
            "options": options,
            "tests": list(self._tests.values()),
        }
        directory = os.path.dirname(os.path.abspath(self._path))
        os.makedirs(directory, exist_ok=True)
        with open(self._path, "w") as f:
            json.dump(document, f, indent=1)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tests = list(self._tests.values())
        write = terminalreporter.write_line
        terminalreporter.section("torch_foo")
        strict = " (strict)" if self._config.getoption("foo_strict") else ""
        raced = [t["nodeid"] for t in tests if t["races"]]
        failed_kernels = [t["nodeid"] for t in tests if t["kernel_errors"]]
        write(f"{_count(len(tests), 'test')} on foo{strict}: {len(raced)} with stream races, "
              f"{len(failed_kernels)} with kernel errors at teardown, "
              f"{sum(1 for t in tests if t['kernel_warnings'])} with kernel warnings")
        for nodeid in raced:
            write(f"  race: {nodeid}")
        for nodeid in failed_kernels:
            write(f"  kernel error: {nodeid}")
        for key, title in (("fallback_ops", "CPU fallback"), ("host_syncs", "host syncs")):
            calls, in_tests = Counter(), Counter()
            for t in tests:
                for op, n in t[key].items():
                    calls[op] += n
                    in_tests[op] += 1
            if calls:
                top = ", ".join(f"{op} ({n} calls in {_count(in_tests[op], 'test')})"
                                for op, n in calls.most_common(_SUMMARY_TOP))
                write(f"{title}: {_count(len(calls), 'operator')}; most frequent: {top}")
            else:
                write(f"{title}: none")
        if self._path is not None:
            write(f"report: {self._path}")
