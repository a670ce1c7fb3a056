"""Fault injection (torch_foo.testing.inject_faults, FOO_SIM_FAULTS): the N-th allocation request or
operator launch fails as a real failure would, once; the allocator and the device stay whole."""

import pytest
import torch

from conftest import run_python, run_python_json
from torch_foo.testing import inject_faults


def _allocated():
    torch.foo.synchronize()
    return torch.foo.memory_allocated(0)


def test_oom_fault_fails_the_nth_allocation_request_as_an_out_of_memory_does(foo):
    baseline = _allocated()
    ooms = torch.foo.memory_stats(0).get("num_ooms", 0)
    with inject_faults("oom@2"):
        first = torch.empty(1000, device="foo")
        with pytest.raises(torch.OutOfMemoryError, match="foo out of memory.*injected by the fault oom@2"):
            torch.empty(1000, device="foo")
        third = torch.ones(1000, device="foo")
    assert torch.foo.memory_stats(0)["num_ooms"] == ooms + 1
    assert _allocated() == baseline + 2 * 4096  # the failed request holds nothing
    del first, third
    assert _allocated() == baseline
    assert torch.arange(10, device="foo").sum().item() == 45


def test_oom_fault_counts_requests_on_every_device_and_fires_once(foo):
    with inject_faults("oom@3"):
        kept = [torch.empty(16, device="foo:0"), torch.empty(16, device="foo:1")]
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(16, device="foo:1")
        kept += [torch.empty(16, device=f"foo:{i % 2}") for i in range(10)]
    assert len(kept) == 12


def test_kernel_fault_fails_the_nth_launch_at_the_next_synchronization(foo):
    x = torch.ones(4, device="foo")
    torch.foo.synchronize()
    baseline = _allocated()
    with inject_faults("kernel@aten::mul:2"):
        doubled = x * 2
        tripled = x * 3  # fails on the device; the call returns
        added = x + 1
    with pytest.raises(RuntimeError, match=r"aten::mul\.Tensor: the kernel failed on the device "
                                           r"\(injected by the fault kernel@aten::mul:2\)"):
        torch.foo.synchronize()
    torch.foo.synchronize()  # reported once
    assert doubled.cpu().tolist() == [2.0] * 4 and added.cpu().tolist() == [2.0] * 4
    assert (x * 5).cpu().tolist() == [5.0] * 4
    del doubled, tripled, added
    assert _allocated() == baseline


def test_a_bare_operator_name_means_aten_and_matches_every_overload(foo):
    x = torch.full((4,), 2.0, device="foo")
    with inject_faults("kernel@pow:2"):
        squares = torch.pow(x, 2)  # aten::pow.Tensor_Scalar, the first
        powers = torch.pow(x, x)  # aten::pow.Tensor_Tensor, the second: fails
    with pytest.raises(RuntimeError, match=r"aten::pow\.Tensor_Tensor: .*kernel@pow:2"):
        torch.foo.synchronize()
    assert squares.cpu().tolist() == [4.0] * 4
    del powers


def test_faults_nest_and_come_back_with_their_counts(foo):
    with inject_faults("oom@2"):
        torch.empty(1, device="foo")  # oom@2 has counted one request
        with inject_faults("oom@1"):
            with pytest.raises(torch.OutOfMemoryError, match="oom@1"):
                torch.empty(1, device="foo")
            torch.empty(1, device="foo")  # oom@1 fired already
        with pytest.raises(torch.OutOfMemoryError, match="oom@2"):
            torch.empty(1, device="foo")
    torch.empty(1, device="foo")


@pytest.mark.parametrize("spec", ["oom@0", "oom@x", "oom@", "kernel@:3", "kernel@aten::mm", "disk@1", "", "oom@1,,oom@2"])
def test_malformed_specs_are_refused(foo, spec):
    with pytest.raises(ValueError, match="fault spec"):
        with inject_faults(spec):
            pass
    torch.empty(1, device="foo")  # nothing was armed


def test_foo_sim_faults_arms_a_process_from_the_start():
    out = run_python_json("""
        import json, torch
        first, second = torch.empty(8, device="foo"), torch.empty(8, device="foo")
        try:
            torch.empty(8, device="foo")
            third = "allocated"
        except torch.OutOfMemoryError as e:
            third = str(e)
        y = first.fill_(1) + 1
        try:
            torch.foo.synchronize()
            kernel = "none"
        except RuntimeError as e:
            kernel = str(e)
        print(json.dumps({"third": third, "kernel": kernel, "after": (y + 1).cpu().tolist()}))
    """, env={"FOO_SIM_FAULTS": "oom@3, kernel@aten::add:1"})
    assert "injected by the fault oom@3" in out["third"]
    assert "aten::add.Tensor: the kernel failed on the device (injected by the fault kernel@aten::add:1)" in out["kernel"]
    assert len(out["after"]) == 8


def test_a_malformed_foo_sim_faults_fails_every_foo_call_naming_it():
    out = run_python_json("""
        import json, torch
        errors = []
        for _ in range(2):
            try:
                torch.empty(1, device="foo")
            except RuntimeError as e:
                errors.append(str(e))
        print(json.dumps(errors))
    """, env={"FOO_SIM_FAULTS": "oom@3,typo"})
    assert len(out) == 2 and all("FOO_SIM_FAULTS='oom@3,typo' is invalid: 'typo'" in e for e in out)


def test_with_launch_blocking_the_failing_launch_raises_at_the_call():
    out = run_python("""
        import torch
        x = torch.ones(4, device="foo")
        try:
            x * 2
        except RuntimeError as e:
            print(e)
        print((x * 2).cpu().tolist())
    """, env={"FOO_SIM_FAULTS": "kernel@aten::mul:1", "FOO_SIM_LAUNCH_BLOCKING": "1"})
    assert "aten::mul.Tensor: the kernel failed on the device (injected by the fault kernel@aten::mul:1)" in out
    assert out.count("launched from") == 1 and "[2.0, 2.0, 2.0, 2.0]" in out
