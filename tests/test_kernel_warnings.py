"""A warning that a CPU kernel raises as it runs on the device reaches
Python's warnings on the host, at its next launch or wait, naming the
operator, as CUDA's host code raises it at the call."""

import threading
import time
import warnings

import pytest
import torch

from conftest import held_stream

DOF = "a warning from inside a kernel"


def _kernel_that_warns():
    """Queues a kernel that warns as it runs, as a CPU kernel's loop would."""
    from torch_foo import _C

    _C._warn_in_kernel(DOF)
    return torch.full((), float("nan"), device="foo")


@pytest.mark.parametrize("wait", ["device", "stream", "event", "accelerator", "item", "next_launch"])
def test_a_kernels_warning_is_raised_by_the_hosts_next_wait_or_launch(foo, wait):
    foo._sleep(100)  # the kernel runs after the call has returned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = _kernel_that_warns()
        assert not [w for w in caught if DOF in str(w.message)]  # not run yet
        if wait == "device":
            foo.synchronize()
        elif wait == "stream":
            foo.current_stream().synchronize()
        elif wait == "event":
            e = foo.Event()
            e.record()
            e.synchronize()
        elif wait == "accelerator":
            # torch's binding shows no warning to Python: the warning stays
            # held through it, for the next call that does.
            torch.accelerator.synchronize()
            assert not [w for w in caught if DOF in str(w.message)]
            torch.ones(1, device="foo")
        elif wait == "item":
            y.item()
        else:
            done = foo.Event()
            done.record()
            while not done.query():  # a query is not a wait: it raises nothing
                time.sleep(0.01)
            assert not [w for w in caught if DOF in str(w.message)]
            torch.ones(1, device="foo").add_(1)  # the next launch raises it
    found = [w for w in caught if DOF in str(w.message)]
    assert len(found) == 1, [str(w.message) for w in caught]
    assert found[0].category is UserWarning
    assert str(found[0].message).startswith("foo::_warn_in_kernel")
    foo.synchronize()


def test_warnings_as_errors_make_the_wait_raise(foo):
    foo._sleep(100)  # both kernels queued before the first warns: the wait raises, not the second launch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = _kernel_that_warns()
        with pytest.raises(UserWarning, match=DOF):
            foo.synchronize()
        assert torch.isnan(y.cpu())  # the result is there all the same


def test_a_kernel_warning_storm_is_bounded_and_counted(foo):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with held_stream() as still_held:  # 1005 kernels queue up behind it and warn only once the host waits
            for _ in range(1005):
                _kernel_that_warns()
            assert still_held()
        foo.synchronize()
    messages = [str(w.message) for w in caught]
    assert sum(DOF in m for m in messages) == 1000
    assert sum(m.startswith("5 more warnings raised by foo kernels were dropped") for m in messages) == 1


def test_a_replayed_kernels_warning_goes_to_the_thread_that_replays(foo):
    # The captured kernel warns again at every replay; the warning is raised
    # on the thread that called replay(), never on the one that captured.
    from torch_foo import _C

    s, g = foo.Stream(), foo.FooGraph()
    with foo.stream(s):
        g.capture_begin()
        _C._warn_in_kernel(DOF)
        g.capture_end()
    foo.synchronize()

    def replay_and_wait():
        g.replay()
        foo.synchronize()

    def on_thread(fn):
        caught = []

        def run():
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                fn()
            caught.extend(str(m.message) for m in w)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        return caught

    def here(fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        return [str(m.message) for m in w]

    def after_any_replay():
        foo.synchronize()
        torch.ones(1, device="foo").add_(1)  # a launch would raise what this thread holds
        foo.synchronize()

    for replayer in ("other thread", "capturing thread", "other thread"):
        if replayer == "other thread":
            on_replayer = on_thread(replay_and_wait)
            elsewhere = here(after_any_replay)
        else:
            on_replayer = here(replay_and_wait)
            elsewhere = on_thread(after_any_replay)
        found = [m for m in on_replayer if DOF in m]
        assert len(found) == 1 and found[0].startswith(f"foo::_warn_in_kernel: {DOF}"), (replayer, on_replayer)
        assert not [m for m in elsewhere if DOF in m], (replayer, elsewhere)
