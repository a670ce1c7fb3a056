"""Warnings that CPU's and CUDA's host code raises before the loops reach the
calling thread at the call, once, as on CUDA; a warning that only a kernel
can raise reaches the thread that launched the kernel, never another."""

import threading
import warnings

import pytest
import torch

from conftest import run_python_json

# Operators whose shared host code warns before it queues anything.
_HOST_WARNINGS = {
    "random_ from out of float's exact range": lambda d: torch.empty(10, device=d).random_(-2**25, 0),
    "random_ to out of float's exact range": lambda d: torch.empty(10, device=d).random_(0, 2**25),
    "std with no degrees of freedom": lambda d: torch.ones(1, device=d).std(),
    "var with no degrees of freedom": lambda d: torch.ones(1, device=d).var(),
    "std_mean with no degrees of freedom": lambda d: torch.std_mean(torch.ones(1, device=d)),
    "var of a dimension with no degrees of freedom": lambda d: torch.ones(2, 1, device=d).var(1),
    "resized out= (add)": lambda d: torch.add(torch.ones(3, device=d), 1, out=torch.zeros(2, device=d)),
    "resized out= (cumsum)": lambda d: torch.cumsum(torch.ones(3, device=d), 0, out=torch.zeros(2, device=d)),
    # arange's own warning (CPU's, not the generic resize warning), once.
    "arange into an out= of another element count": lambda d: torch.arange(-1, 1, 2 / 49,
                                                                           out=torch.zeros(1, 49, device=d)),
    # Through the fallback, whose meta pass sizes the outputs first: one
    # warning per resized output, as CPU's.
    "resized out= (sort, two outputs)": lambda d: torch.sort(torch.tensor([3.0, 1.0, 2.0], device=d), out=(
        torch.zeros(2, device=d), torch.zeros(2, dtype=torch.long, device=d))),
    # A structured operator: its meta function warns on the host, and the
    # kernel's CPU out= function, which runs it again, must not.
    "indexing with a uint8 mask": lambda d: torch.arange(3.0, device=d)[torch.tensor([1, 0, 1], dtype=torch.uint8,
                                                                                     device=d)],
}


def _messages(caught):
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("case", list(_HOST_WARNINGS))
def test_host_code_warnings_are_raised_at_the_call_once(foo, case):
    with warnings.catch_warnings(record=True) as on_cpu:
        warnings.simplefilter("always")
        _HOST_WARNINGS[case]("cpu")
    assert on_cpu, "CPU does not warn"
    foo._sleep(50)  # a kernel could not have run yet
    with warnings.catch_warnings(record=True) as on_foo:
        warnings.simplefilter("always")
        _HOST_WARNINGS[case]("foo")
        assert _messages(on_foo) == _messages(on_cpu)
        assert [w.category for w in on_foo] == [w.category for w in on_cpu]
        foo.synchronize()
        torch.ones(1, device="foo").add_(1)
        foo.synchronize()
    assert _messages(on_foo) == _messages(on_cpu), "raised again later"


def test_a_kernels_warning_reaches_only_its_launching_thread(foo):
    launched = threading.Event()
    done = threading.Event()
    seen_by_a = []

    def thread_a():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            foo._sleep(50)
            _kernel_only_warning()
            launched.set()
            done.wait(10)
            foo.synchronize()
            seen_by_a.extend(_messages(caught))

    a = threading.Thread(target=thread_a)
    with warnings.catch_warnings(record=True) as seen_by_main:
        warnings.simplefilter("always")
        a.start()
        launched.wait(10)
        foo.synchronize()                       # the kernel has run and warned
        torch.ones(1, device="foo").add_(1)     # this thread's launches and waits
        foo.synchronize()
        done.set()
        a.join()
    assert not [m for m in _messages(seen_by_main) if _KERNEL_WARNING in m]
    assert len([m for m in seen_by_a if _KERNEL_WARNING in m]) == 1


_KERNEL_WARNING = "raised inside a kernel"


def _kernel_only_warning():
    # A kernel that warns as it runs, as a CPU kernel's loop would.
    from torch_foo import _C

    _C._warn_in_kernel(_KERNEL_WARNING)


def test_where_with_a_uint8_condition_warns_once_and_computes_as_on_cpu():
    # A deprecation CPU and CUDA warn about once per process (TORCH_WARN_ONCE):
    # each device in a fresh process.
    code = """
        import json, warnings
        import torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c = torch.tensor([1, 0, 1], dtype=torch.uint8, device=DEVICE)
            r = torch.where(c, torch.ones(3, device=DEVICE), torch.zeros(3, device=DEVICE))
            w = [str(x.message) for x in caught]
            values = r.cpu().tolist()
            w_after = [str(x.message) for x in caught]
        print(json.dumps({"at_call": w, "after": w_after, "values": values}))
    """
    on_cpu = run_python_json(code.replace("DEVICE", "'cpu'"))
    on_foo = run_python_json(code.replace("DEVICE", "'foo'"))
    assert [m for m in on_cpu["at_call"] if "uint8 condition" in m], on_cpu
    assert on_foo["at_call"] == on_cpu["at_call"]
    assert on_foo["after"] == on_cpu["after"]
    assert on_foo["values"] == on_cpu["values"] == [1.0, 0.0, 1.0]
