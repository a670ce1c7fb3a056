"""A kernel that fails on the device is reported by every synchronization that
covers it, names its operator, and leaves the device usable."""

import os
import time

import pytest
import torch

from conftest import held_stream, run_python

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


def test_recorded_launch_sites_name_each_launching_line(tmp_path):
    # What pytest --foo turns on: each launch remembers the user's line (past
    # torch.nn's frames), so an error found later names it, every time.
    script = tmp_path / "user_script.py"
    out = run_python("""
        import torch
        from torch_foo import _C
        _C._set_record_launch_sites(True)
        x, table = torch.arange(3.0, device="foo"), torch.nn.Embedding(4, 2).to("foo")
        bad = torch.tensor([10], device="foo")
        def gather():
            return torch.gather(x, 0, bad)  # line 8
        def lookup():
            return table(bad)  # line 10
        for _ in range(2):
            for launch in (gather, lookup):
                launch()
                try:
                    torch.foo.synchronize()
                except (RuntimeError, IndexError) as e:  # CPU's type: gather's RuntimeError, embedding's IndexError
                    print(str(e).splitlines()[0])
    """, script=str(script))
    lines = out.strip().splitlines()
    assert len(lines) == 4, out
    for gather, lookup in (lines[0:2], lines[2:4]):
        assert "aten::gather" in gather and f"launched from {script}:8 (" in gather, out
        assert f"launched from {script}:10 (" in lookup, out


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


_CALL_ERRORS = {
    "mm dtypes": lambda d: torch.ones(2, 2, device=d) @ torch.ones(2, 2, dtype=torch.float64, device=d),
    "bmm dtypes": lambda d: torch.bmm(torch.ones(1, 2, 2, device=d), torch.ones(1, 2, 2, dtype=torch.float64, device=d)),
    "mv dtypes": lambda d: torch.mv(torch.ones(2, 2, device=d), torch.ones(2, dtype=torch.float64, device=d)),
    "dot dtypes": lambda d: torch.dot(torch.ones(2, device=d), torch.ones(2, dtype=torch.float64, device=d)),
    "linear dtypes": lambda d: torch.nn.functional.linear(torch.ones(2, 2, device=d),
                                                          torch.ones(2, 2, dtype=torch.float64, device=d)),
    "conv dtypes": lambda d: torch.nn.functional.conv2d(torch.ones(1, 1, 3, 3, device=d), torch.ones(1, 1, 2, 2, device=d),
                                                        torch.ones(1, dtype=torch.float64, device=d)),
    "layer_norm weight": lambda d: torch.nn.functional.layer_norm(torch.ones(2, 3, device=d), (3,),
                                                                  weight=torch.ones(4, device=d)),
    "cross_entropy target": lambda d: torch.nn.functional.cross_entropy(torch.ones(2, 3, device=d),
                                                                        torch.zeros(2, dtype=torch.int32, device=d)),
    "index_put dtypes": lambda d: torch.zeros(3, device=d).__setitem__(torch.arange(2, device=d),
                                                                         torch.arange(1, 3, device=d)),
    "full overflow": lambda d: torch.full((2,), 300, dtype=torch.uint8, device=d),
    "randint range": lambda d: torch.randint(5, 3, (2,), device=d),
    "uniform range": lambda d: torch.empty(2, device=d).uniform_(2, 1),
    "normal std": lambda d: torch.empty(2, device=d).normal_(0, -1),
    "max of nothing": lambda d: torch.empty(0, device=d).max(),
    "float mask": lambda d: torch.zeros(2, device=d).masked_fill(torch.ones(2, device=d), 1.0),
}


@pytest.mark.parametrize("case", list(_CALL_ERRORS))
def test_argument_errors_that_cpu_kernels_find_as_they_run_are_raised_at_the_call(foo, case):
    # CUDA makes these checks on the host before it launches; foo makes them
    # at the call too (the stream is busy: a kernel could not have failed
    # yet), with the CPU kernel's exception and message. (Each case makes
    # its inputs with factories: torch.tensor(data) would wait for the stream.)
    with pytest.raises(Exception) as on_cpu:
        _CALL_ERRORS[case]("cpu")
    with held_stream() as still_held:
        with pytest.raises(type(on_cpu.value)) as on_foo:
            _CALL_ERRORS[case]("foo")
        assert still_held() and not foo.current_stream().query()
    assert str(on_foo.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]
    foo.synchronize()  # and nothing failed on the device


def test_host_checks_accept_what_cpu_accepts(foo):
    # A boolean mask with a CPU number of another dtype goes to masked_fill_
    # (any dtype), and an empty batched product checks nothing, on CPU, CUDA
    # and foo alike.
    for device in ("cpu", "foo"):
        x = torch.zeros(3, device=device, dtype=torch.half)
        x[torch.tensor([True, False, True], device=device)] = torch.tensor(7)
        assert x.tolist() == [7.0, 0.0, 7.0], device
        empty = torch.bmm(torch.zeros(0, 2, 3, device=device), torch.zeros(0, 3, 2, dtype=torch.float64, device=device))
        assert empty.shape == (0, 2, 2), device
    # The overlap exemption of fill_-like operators is their value only: an
    # index that is an element of the filled tensor still raises.
    t = torch.zeros(3, dtype=torch.long, device="foo")
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        t.index_fill_(0, t[1], torch.tensor(9, device="foo"))
