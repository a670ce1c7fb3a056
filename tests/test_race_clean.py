"""The correctly synchronized code of the test suite, rerun with the stream
race detector on (FOO_SIM_RACE_CHECK=1): not one report.

A second pytest run in a subprocess over the stream, event, allocator,
training, compute and graph tests (the autograd, DataLoader and optimizer
patterns are in tests/test_race.py); the Python children some tests start are
checked too (conftest.run_python collects their reports). Left out: the
tests that demonstrate a missing synchronization on purpose (the detector
finds it: tests/test_race.py covers that), one that polls pinned memory a
graph replay writes, one that asserts line numbers of its child's code,
one whose two streams write a tensor in the order the scheduler picks,
and two slow ones that only list fallback operators or read a setting."""

import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import _ROOT

pytestmark = pytest.mark.slow  # a second pytest run of six test files

FILES = ["tests/test_streams.py", "tests/test_events.py", "tests/test_allocator.py", "tests/test_training.py",
         "tests/test_compute.py", "tests/test_graphs.py"]
LEFT_OUT = [
    "test_missing_synchronization_is_real",  # a side stream reads without wait_stream, on purpose
    "test_non_blocking_copy_to_pinned_memory_is_asynchronous",  # reads pinned memory before the copy, on purpose
    "test_fork_and_join_inside_a_capture_run_concurrently",  # polls pinned memory a replay writes, on purpose
    "test_launch_blocking_makes_launches_synchronous",  # asserts its child's line numbers
    "test_high_priority_stream_goes_first",  # two streams write one tensor unordered, on purpose
    "test_fallback_lists_and_warns_once_per_operator",  # slow, one stream
    "test_malformed_fallback_warning_switch_is_reported_and_off",  # slow, one stream
]


def test_suite_subset_has_no_race(tmp_path):
    reports = str(tmp_path / "races")
    env = dict(os.environ, FOO_TEST_RACE_CHECK="1", FOO_TEST_RACE_REPORTS=reports)
    for name in list(env):
        if name.startswith("PYTEST_"):
            env.pop(name)  # a clean pytest, not an xdist worker
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:warnings",
            *FILES, "-k", " and ".join(f"not {name}" for name in LEFT_OUT)]
    result = subprocess.run(args, cwd=_ROOT, env=env, capture_output=True, text=True, timeout=600)
    found = []
    for path in glob.glob(reports + ".*"):
        with open(path) as f:
            found += [json.loads(line) for line in f]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout
    assert found == [], "\n\n".join(f"{r['test']}:\n{r['message']}" for r in found)


def test_the_clean_run_can_fail(tmp_path):
    """The same machinery reports a real race: a clean run means something."""
    (tmp_path / "conftest.py").write_text(  # the suite's conftest, under another name
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('suite_conftest', {os.path.join(_ROOT, 'tests', 'conftest.py')!r})\n"
        "suite = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(suite)\n"
        "_race_reports_of_each_test = suite._race_reports_of_each_test\n")
    (tmp_path / "test_racy.py").write_text(
        "import torch\n"
        "def test_racy():\n"
        "    x = torch.ones(64, device='foo')\n"
        "    with torch.foo.stream(torch.foo.Stream()):\n"
        "        x.add_(1)  # no wait for the fill on the default stream\n"
        "    torch.foo.synchronize()\n")
    reports = str(tmp_path / "races")
    env = dict(os.environ, FOO_TEST_RACE_CHECK="1", FOO_TEST_RACE_REPORTS=reports)
    for name in list(env):
        if name.startswith("PYTEST_"):
            env.pop(name)
    result = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "test_racy.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = [json.loads(line) for path in glob.glob(reports + ".*") for line in open(path)]
    assert len(found) == 1, result.stdout[-3000:]
    assert "test_racy" in found[0]["test"] and "aten::add_" in found[0]["message"]
