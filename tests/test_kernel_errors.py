"""A kernel that fails on the device is reported by every synchronization that
covers it, names its operator, and leaves the device usable."""

import os
import time

import pytest
import torch

from conftest import run_python

OUT_OF_BOUNDS = r"aten::gather.*out of bounds"


def _failing_gather():
    """Queues a gather whose index is checked only when the kernel runs."""
    x = torch.arange(3.0, device="foo")
    return torch.gather(x, 0, torch.tensor([10], device="foo"))


@pytest.mark.parametrize("sync", ["stream", "event_synchronize", "event_query", "accelerator", "item", "cpu_copy"])
def test_error_is_raised_by_each_kind_of_synchronization(foo, sync):
    foo._sleep(50)
    y = _failing_gather()
    after = foo.Event()
    after.record()
    with pytest.raises(RuntimeError, match=OUT_OF_BOUNDS):
        if sync == "stream":
            foo.current_stream().synchronize()
        elif sync == "event_synchronize":
            after.synchronize()
        elif sync == "event_query":
            while not after.query():
                time.sleep(0.005)
        elif sync == "accelerator":
            torch.accelerator.synchronize()
        elif sync == "item":
            y.sum().item()
        else:
            y.cpu()
    torch.accelerator.synchronize()   # reported: the device is clean again
    assert (torch.arange(3.0, device="foo") + 1).cpu().tolist() == [1.0, 2.0, 3.0]


def test_event_recorded_before_the_failure_does_not_report_it(foo):
    before = foo.Event()
    before.record()
    _failing_gather()
    before.synchronize()              # its work was fine
    with pytest.raises(RuntimeError, match=OUT_OF_BOUNDS):
        foo.synchronize()


def test_error_reaches_a_stream_that_waited_on_the_failed_work(foo):
    side = foo.Stream()
    _failing_gather()
    side.wait_stream(foo.current_stream())
    with foo.stream(side):
        foo._sleep(1)
    with pytest.raises(RuntimeError, match=OUT_OF_BOUNDS):
        side.synchronize()
    foo.synchronize()


def test_asynchronous_error_says_how_to_find_the_launch(foo):
    _failing_gather()
    with pytest.raises(RuntimeError, match="FOO_SIM_LAUNCH_BLOCKING=1"):
        foo.synchronize()


def test_launch_blocking_error_names_the_users_file_and_line(tmp_path):
    script = tmp_path / "user_script.py"
    out = run_python("""
        import torch
        x = torch.arange(3.0, device="foo")
        try:
            torch.gather(x, 0, torch.tensor([10], device="foo"))   # line 5
        except RuntimeError as e:
            print(str(e).splitlines()[0])
        print((x + 1).cpu().tolist())
    """, env={"FOO_SIM_LAUNCH_BLOCKING": "1"}, script=str(script))
    first, usable = out.strip().splitlines()
    assert "aten::gather" in first and "out of bounds" in first
    assert f"launched from {script}:5" in first
    assert usable == "[1.0, 2.0, 3.0]"


def test_freeing_memory_never_raises_a_kernel_error(foo):
    side = foo.Stream()
    t = torch.ones(1024, device="foo")
    with foo.stream(side):
        _failing_gather()
        t.add_(1)
    t.record_stream(side)
    del t                             # the deleter records an event on `side`
    time.sleep(0.2)                   # let the failed work finish...
    torch.empty(1024, device="foo")   # ...so this allocation polls the allocator's event
    with pytest.raises(RuntimeError, match=OUT_OF_BOUNDS):
        side.synchronize()            # the failure was still the user's to see
    torch.foo.empty_cache()
    assert torch.ones(3, device="foo").sum().item() == 3.0
