"""What ``pytest --foo`` does once activated (``torch_foo_pytest`` registers it).

Each test owns what foo finds while it runs: at its teardown every started
foo device is synchronized, and a kernel error still pending there fails
that test's teardown, naming the operator and where it was launched; a race
in raise mode fails the test that launched it. Each test starts with no
pending error, no race report and fresh counts of fallback operators and
host synchronizations, which go into the report (``--foo-report``).
"""

from collections import Counter

import pytest
import torch

from torch_foo import RaceError, _C
from torch_foo.testing._faults import inject_faults
from torch_foo.testing._report import FooReport

# Errors one synchronization may raise in a row (each pending error is raised
# once): past this many, a device that keeps failing is reported as such.
_MAX_ERRORS_PER_DEVICE = 32

_DATA = pytest.StashKey[dict]()
_COUNTS = pytest.StashKey[tuple]()
_FAILED = pytest.StashKey[bool]()


def activate(config: pytest.Config, wanted: dict, before: dict, started_before: bool) -> None:
    """Registers the per-test device checks where tests run, and the report where reports arrive."""
    _check_machine(wanted, before, started_before)
    if torch.foo.device_count() == 0:  # reads the configuration without starting the runtime
        raise pytest.UsageError(f"--foo: no foo device: {_C._no_device_reason()}")
    spec = config.getoption("foo_faults")
    if spec is not None:
        problem = _C._faults_check(spec)
        if problem:
            raise pytest.UsageError(f"--foo-faults={spec}: {problem}")
    worker = hasattr(config, "workerinput")
    controller = not worker and config.getoption("dist", default="no") != "no"
    if not controller:
        # A kernel error found at a test's teardown names the line that launched it.
        _C._set_record_launch_sites(True)
        config.pluginmanager.register(PerTestDevices(), "torch_foo_per_test")
    if not worker:
        config.pluginmanager.register(FooReport(config), "torch_foo_report")


def _check_machine(wanted: dict, before: dict, started_before: bool) -> None:
    """The options set FOO_SIM_* for a runtime that reads them once, when it starts; if something
    started it before pytest configured it, the values in force must already be the ones asked for."""
    if not started_before:
        return
    late = sorted(name for name, value in wanted.items() if before.get(name) != value)
    devices = wanted.get("FOO_SIM_DEVICE_COUNT")
    if devices is not None and int(devices) == torch.foo.device_count():
        late = [name for name in late if name != "FOO_SIM_DEVICE_COUNT"]
    if late:
        raise pytest.UsageError(
            f"foo's runtime started before pytest configured it (a plugin loaded before torch_foo's "
            f"uses a foo device), with other values of {', '.join(late)} than the --foo options ask for; "
            f"set them in the environment instead")


class PerTestDevices:
    """Makes each test own its device errors, races and counts."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        # Before fixtures: what they launch belongs to this test.
        _C._take_op_counts()
        if torch.foo.race_check_mode() != "off":
            torch.foo.clear_race_reports()
        item.stash[_COUNTS] = (Counter(), Counter())
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        marker = item.get_closest_marker("foo_faults")
        if marker is None:
            return (yield)
        with inject_faults(*marker.args, **marker.kwargs):
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem):
        try:
            result = yield  # fixture finalizers first: what they queue is this test's too
        except BaseException as e:
            problem = self._finish(item)
            if problem:
                e.add_note(problem)
            raise
        problem = self._finish(item)
        if problem:
            pytest.fail(problem, pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        _count(item)
        report = yield
        # Rendering a failure (pytest's repr of foo tensors) reads the device: not the test's doing.
        _C._take_op_counts()
        if report.failed:
            item.stash[_FAILED] = True
        if call.when == "teardown" and _DATA in item.stash:
            report.user_properties.append(("torch_foo", item.stash[_DATA]))
        return report

    def _finish(self, item: pytest.Item) -> str:
        """Synchronizes every started device and records the test's data; returns what must fail the
        test ("" if nothing)."""
        errors = _synchronize_devices()
        fallback, syncs = _count(item)
        races = torch.foo.race_reports() if torch.foo.race_check_mode() != "off" else []
        item.stash[_DATA] = {
            "fallback_ops": _by_count(fallback),
            "host_syncs": _by_count(syncs),
            "races": [r["message"] for r in races],
            "kernel_errors": errors,
        }
        problems = []
        if errors:
            problems.append("foo kernels launched by this test failed:\n" + "\n".join(errors))
        # In raise mode a race raises at the launch that completes it (a race of the host with queued
        # work, at the next launch or synchronization: maybe the plugin's own, above); one that did
        # not fail the test was caught by the code under test, or found after it.
        if races and torch.foo.race_check_mode() == "raise" and not item.stash.get(_FAILED, False):
            problems.append("stream races in this test did not fail it (caught by the code under test, or "
                            "raised by the synchronization after it):\n" + "\n".join(r["message"] for r in races))
        return "\n".join(problems)


def _synchronize_devices() -> list[str]:
    """Waits for every foo device the process started; the errors that were pending, one a line."""
    if not torch.foo.is_initialized():
        return []  # nothing was ever launched: do not start the runtime
    errors = []
    for device in range(torch.foo.device_count()):
        for _ in range(_MAX_ERRORS_PER_DEVICE):
            try:
                torch.foo.synchronize(device)
                break
            except RaceError:
                pass  # in the race detector's reports, which _finish reports
            except RuntimeError as e:
                errors.append(f"foo:{device}: {e}")
        else:
            errors.append(f"foo:{device}: still failing after {_MAX_ERRORS_PER_DEVICE} errors")
    return errors


def _count(item: pytest.Item) -> tuple:
    """Adds what the operators did since the last take to the test's counts; the counts."""
    fallback, syncs = item.stash.setdefault(_COUNTS, (Counter(), Counter()))
    new_fallback, new_syncs = _C._take_op_counts()
    fallback.update(new_fallback)
    syncs.update(new_syncs)
    return fallback, syncs


def _by_count(counts: dict) -> dict:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
