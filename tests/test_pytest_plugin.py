"""pytest --foo: each test owns its device errors and races, the report, the options; without --foo
the plugin imports nothing and changes nothing. Each case runs pytest in a child process."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from conftest import FOO_SIM_DEFAULTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CI_DEMO = os.path.join(ROOT, "examples", "ci_demo")


def _pytest(args, cwd, env=None, timeout=600, autoload=False):
    """Runs ``python -m pytest ARGS`` in ``cwd`` (which the child imports from) with the test machine's
    FOO_SIM_* defaults, none of this pytest's own variables, and no cache.

    Without ``autoload`` the child loads torch_foo's plugin (``-p torch_foo``, the entry point's name)
    and no other installed plugin: those would only add their import time to every child (a second
    or more each). ``autoload=True`` is pytest as a user starts it, every pytest11 plugin loaded.
    """
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FOO_SIM_"))}
    full_env.update(FOO_SIM_DEFAULTS)
    full_env.update(env or {})
    full_env = {k: v for k, v in full_env.items() if v is not None}
    plugins = [] if autoload else ["-p", "torch_foo"]
    if not autoload:
        full_env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugins, "-rA", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)


def _suite(tmp_path, code, name="test_sample.py"):
    (tmp_path / name).write_text(textwrap.dedent(code))
    return tmp_path


def _line_of(path, text):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_the_plugin_module_imports_neither_torch_nor_torch_foo():
    code = "import sys, torch_foo_pytest; print(sorted(m for m in ('torch', 'torch_foo') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=os.path.expanduser("~"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_foo_a_suite_runs_as_before_and_torch_is_never_imported(tmp_path):
    _suite(tmp_path, """
        import sys

        def test_nothing_imported_torch():
            assert "torch" not in sys.modules and "torch_foo" not in sys.modules
    """)
    result = _pytest(["-q"], tmp_path, autoload=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout and " torch_foo " not in result.stdout  # no summary section
    help_text = _pytest(["--help"], tmp_path, autoload=True).stdout
    for option in ("--foo ", "--foo-devices", "--foo-memory", "--foo-strict", "--foo-report", "--foo-faults"):
        assert option in help_text


@pytest.mark.parametrize("args, message", [
    (["--foo-strict", "--foo-report=r.json"], "--foo-strict, --foo-report given without --foo"),
    (["--foo", "--foo-devices=0"], "--foo-devices=0: expected an integer from 1 to 64"),
    (["--foo", "--foo-memory=lots"], "--foo: no foo device: FOO_SIM_DEVICE_MEMORY='lots' is invalid"),
])
def test_bad_options_are_usage_errors(tmp_path, args, message):
    _suite(tmp_path, "def test_x():\n    pass\n")
    result = _pytest(args, tmp_path)
    assert result.returncode == 4 and message in result.stderr, result.stdout + result.stderr


def test_devices_and_memory_options_set_the_simulated_machine(tmp_path):
    _suite(tmp_path, """
        import torch

        def test_machine():
            assert torch.foo.device_count() == 3
            assert torch.foo.mem_get_info(2)[1] == 1 << 30
    """)
    result = _pytest(["--foo", "--foo-devices=3", "--foo-memory=1GiB"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_options_are_refused_when_the_runtime_started_before_pytest_configured_it(tmp_path):
    # A plugin loaded before torch_foo's (-p) that uses a device: the runtime has read FOO_SIM_* already.
    (tmp_path / "early_plugin.py").write_text("import torch\ntorch.ones(1, device='foo')\n")
    _suite(tmp_path, "def test_x():\n    pass\n")
    result = _pytest(["-p", "early_plugin", "--foo", "--foo-devices=3"], tmp_path,
                     env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 4, result.stdout + result.stderr
    assert "started before pytest configured it" in result.stderr and "FOO_SIM_DEVICE_COUNT" in result.stderr
    same = _pytest(["-p", "early_plugin", "--foo", "--foo-devices=2"], tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert same.returncode == 0, same.stdout + same.stderr


PENDING_ERROR = """
    import torch

    def test_launches_a_kernel_that_fails():
        table = torch.zeros(10, device="foo")
        index = torch.tensor([12], device="foo")
        table[index]  # out of range: the kernel finds it, after the call returned

    def test_the_next_test_synchronizes():
        torch.foo.synchronize()
        assert torch.ones(3, device="foo").sum().item() == 3
"""


def test_a_pending_kernel_error_fails_the_test_that_launched_it(tmp_path):
    suite = _suite(tmp_path, PENDING_ERROR)
    line = _line_of(suite / "test_sample.py", "table[index]")
    result = _pytest(["--foo"], tmp_path)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "2 passed, 1 error" in out  # the first passed its call, and errs at its teardown
    assert "ERROR at teardown of test_launches_a_kernel_that_fails" in out
    assert "aten::index" in out and f"launched from {suite / 'test_sample.py'}:{line}" in out
    assert "PASSED test_sample.py::test_the_next_test_synchronizes" in out
    # Without the plugin the error lands on the next test that synchronizes.
    plain = _pytest([], tmp_path)
    assert "FAILED test_sample.py::test_the_next_test_synchronizes" in plain.stdout, plain.stdout
    assert "PASSED test_sample.py::test_launches_a_kernel_that_fails" in plain.stdout


def test_a_race_the_code_under_test_catches_still_fails_its_test(tmp_path):
    _suite(tmp_path, """
        import torch

        def test_swallows_the_race():
            x = torch.ones(1024, device="foo")
            x.mul_(2)
            side = torch.foo.Stream()
            try:
                with torch.foo.stream(side):
                    (x + 1).sum()
            except RuntimeError:
                pass  # a library that hides errors

        def test_after():
            assert torch.foo.race_reports() == []
    """)
    result = _pytest(["--foo", "--foo-strict"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 passed, 1 error" in result.stdout
    assert "ERROR at teardown of test_swallows_the_race" in result.stdout
    assert "stream races in this test did not fail it (caught by the code under test" in result.stdout
    assert "stream race on" in result.stdout


def test_ci_demo_under_strict_mode_fails_exactly_the_test_that_forgets_a_wait(tmp_path):
    report_path = tmp_path / "report.json"
    result = _pytest(["--foo", "--foo-strict", f"--foo-report={report_path}"], CI_DEMO)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "1 failed, 4 passed" in out
    assert "FAILED tests/test_tinytrain.py::test_scoring_on_a_side_stream" in out and "RaceError: torch_foo found a stream race" in out
    test_file = os.path.join(CI_DEMO, "tests", "test_tinytrain.py")
    write_line = _line_of(pathlib.Path(test_file), "inputs.mul_(2.0)")
    read_line = _line_of(pathlib.Path(test_file), "scores = model(inputs)")

    report = json.loads(report_path.read_text())
    assert report["options"]["foo_strict"] is True
    tests = {t["nodeid"].split("::")[1]: t for t in report["tests"]}
    assert len(tests) == 5
    racy = tests.pop("test_scoring_on_a_side_stream")
    assert racy["outcome"] == "failed" and len(racy["races"]) == 1
    # pytest's rendering of the failure (it prints foo tensors) is not counted as the test's.
    assert racy["fallback_ops"] == {} and "aten::_local_scalar_dense" not in racy["host_syncs"]
    assert f"test_tinytrain.py:{write_line}" in racy["races"][0] and f"test_tinytrain.py:{read_line}" in racy["races"][0]
    assert all(t["outcome"] == "passed" and not t["races"] and not t["kernel_errors"] for t in tests.values())
    evaluation = tests["test_evaluation_counts_predictions_per_class"]
    assert evaluation["fallback_ops"]["aten::bincount"] == 4  # one per evaluated batch
    assert evaluation["host_syncs"]["aten::bincount"] == 4
    assert evaluation["host_syncs"]["aten::_local_scalar_dense"] == 3 + 1  # an .item() per epoch, the accuracy
    assert tests["test_training_reduces_the_loss"]["host_syncs"]["aten::_local_scalar_dense"] == 5

    summary = out[out.index("torch_foo"):]
    assert "5 tests on foo (strict): 1 with stream races" in summary
    assert "race: tests/test_tinytrain.py::test_scoring_on_a_side_stream" in summary
    assert "CPU fallback:" in summary and "aten::bincount (4 calls in 1 test)" in summary and "host syncs:" in summary


def test_the_report_gathers_the_tests_and_kernel_warnings_of_every_xdist_worker(tmp_path):
    _suite(tmp_path, """
        import pytest
        import torch

        @pytest.mark.parametrize("n", range(4))
        def test_unique(n):
            assert torch.unique(torch.arange(n + 1, device="foo")).numel() == n + 1

        def test_a_kernel_that_warns():
            from torch_foo import _C
            _C._warn_in_kernel("a warning from inside a kernel")  # as a CPU kernel's loop warns
            torch.foo.synchronize()
    """)
    result = _pytest(["--foo", "-p", "xdist", "-n", "2", "--foo-report=r.json"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = {t["nodeid"].split("::")[1]: t for t in json.loads((tmp_path / "r.json").read_text())["tests"]}
    assert sorted(tests) == sorted([f"test_unique[{n}]" for n in range(4)] + ["test_a_kernel_that_warns"])
    warned = tests.pop("test_a_kernel_that_warns")
    assert len(warned["kernel_warnings"]) == 1 and warned["kernel_warnings"][0].startswith("foo::_warn_in_kernel: a warning from inside a kernel")
    for t in tests.values():
        assert t["outcome"] == "passed" and t["host_syncs"]["aten::_unique2"] == 1 and not t["kernel_warnings"]
    assert "1 with kernel warnings" in result.stdout


def test_the_faults_marker_and_option(tmp_path):
    _suite(tmp_path, """
        import pytest
        import torch

        @pytest.mark.foo_faults("oom@2")
        def test_second_allocation_fails():
            torch.empty(10, device="foo")
            with pytest.raises(torch.OutOfMemoryError, match="oom@2"):
                torch.empty(10, device="foo")

        def test_unaffected():
            torch.empty(10, device="foo")
            torch.empty(10, device="foo")
    """)
    result = _pytest(["--foo"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    bad = _pytest(["--foo", "--foo-faults=oom@none"], tmp_path)
    assert bad.returncode == 4 and "--foo-faults=oom@none: 'oom@none': expected oom@N" in bad.stderr
