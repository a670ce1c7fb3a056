"""A host thread waiting for the device runs the queued kernels itself when an
idle executor would take them (foo_sim's host work), and a kernel it runs
behaves exactly as on an executor: it does not see the host's dispatch
modes, autocast, grad or inference mode, profiler, current device or
stream; it fails, warns, is profiled and is delayed as there; and the host
gets its own state back.

Most tests here wait as a program does and repeat until the waiting host
did run the work (an executor may win the race to it now and then; each
attempt first lets the executors stop polling for launches, so that the
launch has to wake one). Those
in a child with FOO_SIM_LAUNCH_BLOCKING=1 have every launch run on the
launching host, inside the operator's call."""

import contextlib
import threading
import time
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from conftest import run_python_json
from torch_foo import _C

ATTEMPTS = 200
# Longer than an idle executor polls for the next launch (foo_sim's kSpin,
# 50 us) before it blocks.
IDLE_S = 0.002


def on_the_waiting_host(launch, wait, kernels):
    """launch(), then wait(launched), until the host ran at least `kernels`
    kernels itself during the wait; returns that attempt's wait() result."""
    for _ in range(ATTEMPTS):
        time.sleep(IDLE_S)
        launched = launch()
        before = _C._host_work_count()
        result = wait(launched)
        if _C._host_work_count() - before >= kernels:
            return result
    pytest.fail(f"the waiting host never ran the work itself in {ATTEMPTS} attempts")


# A kernel that reports the thread state it runs in. It has only a CPU
# implementation, so on foo it is queued through the fallback, which runs
# that implementation (Python, calling torch) on the stream.
SEEN = []


@torch.library.custom_op("foo_test_host_work::probe", mutates_args=(), device_types="cpu")
def probe(x: torch.Tensor) -> torch.Tensor:
    foo = torch.foo
    SEEN.append({
        "thread": threading.get_ident(),
        "grad": torch.is_grad_enabled(),
        "inference": torch.is_inference_mode_enabled(),
        "autocast": [torch.is_autocast_enabled(t) for t in ("cpu", "foo")],
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
        "profiled": torch.autograd._profiler_enabled(),
        "device": foo.current_device(),
        "default_streams": [foo.current_stream(d) == foo.default_stream(d) for d in range(foo.device_count())],
        "threads": torch.get_num_threads(),
        "functorch_level": torch._C._functorch.maybe_current_level(),
        # A matrix product under CPU autocast would be computed in bfloat16.
        "mm": torch.mm(x, x).to(torch.float64),
    })
    return x.clone()


@probe.register_fake
def _(x):
    return torch.empty_like(x)


def _probe_input(device="foo"):
    torch.manual_seed(0)
    return torch.randn(32, 32).to(device)


def seen_on_an_executor(x):
    """What the probe sees on an executor: waited for by polling, which
    leaves the work to the executors."""
    SEEN.clear()
    probe(x)
    while not torch.foo.current_stream(x.device.index).query():
        pass
    return SEEN[-1]


def same_state(a, b):
    """Equal but for the thread and the intra-op thread count,
    and the product within float32's rounding."""
    close = torch.allclose(a["mm"], b["mm"], rtol=1e-5, atol=1e-4)
    return close and {k: v for k, v in a.items() if k not in ("thread", "threads", "mm")} == {
        k: v for k, v in b.items() if k not in ("thread", "threads", "mm")}


class Recording(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(str(func))
        return func(*args, **(kwargs or {}))


def _no_grad():
    return torch.no_grad()


def _inference():
    return torch.inference_mode()


def _cpu_autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _foo_autocast():
    return torch.autocast("foo", dtype=torch.bfloat16)


def _dispatch_mode():
    return Recording()


def _profiled():
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])


@contextlib.contextmanager
def _functorch_transform():
    """A torch.func.grad level, on as inside the function grad transforms."""
    torch._C._functorch._grad_increment_nesting()
    try:
        yield
    finally:
        torch._C._functorch._grad_decrement_nesting()


def _after_functorch():
    """A thread that ran a transform keeps functorch's state, its transform
    stack empty (as after torch.compile, whose AOTAutograd uses one)."""
    torch.func.vmap(torch.neg)(torch.ones(2, 3))
    return contextlib.nullcontext()


HOST_STATES = {"no_grad": _no_grad, "inference_mode": _inference, "cpu_autocast": _cpu_autocast,
               "foo_autocast": _foo_autocast, "dispatch_mode": _dispatch_mode, "profiler": _profiled,
               "functorch_transform": _functorch_transform, "after_functorch": _after_functorch}


@pytest.mark.parametrize("state", sorted(HOST_STATES))
def test_a_kernel_the_waiting_host_runs_sees_an_executors_state(foo, state):
    x = _probe_input()
    executor = seen_on_an_executor(x)
    assert executor["thread"] != threading.get_ident()
    host_side = {}

    def launch():
        SEEN.clear()
        context = HOST_STATES[state]()
        context.__enter__()
        probe(x)
        return context

    def wait(context):
        torch.foo.synchronize()
        # The host's own state is back once the wait returns.
        host_side.update(grad=torch.is_grad_enabled(), inference=torch.is_inference_mode_enabled(),
                         autocast=[torch.is_autocast_enabled(t) for t in ("cpu", "foo")],
                         modes=torch._C._len_torch_dispatch_stack(), profiled=torch.autograd._profiler_enabled())
        context.__exit__(None, None, None)
        return SEEN[-1]

    on_host = on_the_waiting_host(launch, wait, kernels=1)
    assert on_host["thread"] == threading.get_ident()
    assert same_state(on_host, executor), (on_host, executor)
    assert executor["threads"] == on_host["threads"] == 1  # a small kernel, wherever it runs
    expected_host = {"grad": state != "no_grad" and state != "inference_mode",
                     "inference": state == "inference_mode",
                     "autocast": [state == "cpu_autocast", state == "foo_autocast"],
                     "modes": int(state == "dispatch_mode"), "profiled": state == "profiler"}
    assert host_side == expected_host


def test_a_dispatch_mode_does_not_see_the_operators_a_kernel_calls_on_the_host(foo):
    x = _probe_input()

    def launch():
        mode = Recording()
        mode.__enter__()
        probe(x)
        return mode

    def wait(mode):
        torch.foo.synchronize()
        mode.__exit__(None, None, None)
        return mode.calls

    calls = on_the_waiting_host(launch, wait, kernels=1)
    assert calls == ["foo_test_host_work.probe.default"], calls  # not the kernel's aten.mm on CPU tensors


def test_a_kernel_on_another_device_and_stream_runs_on_the_host_with_an_executors(foo):
    x = _probe_input("foo:1")
    side = foo.Stream(1)
    with foo.stream(side):
        executor = seen_on_an_executor(x)

    def launch():
        SEEN.clear()
        foo.set_device(0)
        with foo.stream(side):
            probe(x)

    def wait(_):
        with foo.stream(side):  # the host's current stream of device 1 while it runs the kernel
            side.synchronize()
        return SEEN[-1]

    on_host = on_the_waiting_host(launch, wait, kernels=1)
    assert on_host["device"] == executor["device"] == 1
    assert on_host["default_streams"] == executor["default_streams"] == [True, True]
    assert foo.current_device() == 0 and foo.current_stream(1) == foo.default_stream(1)


def test_a_kernel_runs_with_the_thread_count_of_its_launch_and_the_host_keeps_its_own(foo):
    x = torch.randn(256, 256).to("foo")  # more elements than ATen's grain size: not a serial kernel
    threads = torch.get_num_threads()

    # The host runs such kernels only on one intra-op thread of its own (more
    # would bring a second OpenMP team beside the executors'): it waits on
    # one, the kernel was launched on two.
    def launch():
        SEEN.clear()
        torch.set_num_threads(2)
        probe(x)
        torch.set_num_threads(1)

    def wait(_):
        foo.synchronize()
        return SEEN[-1], torch.get_num_threads()

    try:
        seen, after = on_the_waiting_host(launch, wait, kernels=1)
    finally:
        torch.set_num_threads(threads)
    assert seen["threads"] == 2
    assert after == 1


def test_a_host_on_several_intra_op_threads_runs_small_kernels_on_one_and_leaves_the_rest(foo):
    # Its own OpenMP team would run beside the executors' teams: such a host
    # takes only kernels over fewer elements than ATen's grain size (a loop
    # over them takes one thread anyway). Those run on one thread wherever
    # they run: BLAS would start a team for a small product.
    threads = torch.get_num_threads()
    small = _probe_input()  # 32 x 32
    large = torch.randn(256, 256).to("foo")  # 65,536 elements and more in the product
    torch.set_num_threads(2)
    try:
        assert seen_on_an_executor(small)["threads"] == 1
        assert seen_on_an_executor(large)["threads"] == 2

        def launch():
            SEEN.clear()
            probe(small)

        seen = on_the_waiting_host(launch, lambda _: (foo.synchronize(), SEEN[-1])[1], kernels=1)
        assert seen["thread"] == threading.get_ident() and seen["threads"] == 1
        assert torch.get_num_threads() == 2

        for _ in range(20):
            SEEN.clear()
            before = _C._host_work_count()
            probe(large)
            foo.synchronize()
            assert _C._host_work_count() == before
            assert SEEN[-1]["thread"] != threading.get_ident() and SEEN[-1]["threads"] == 2
    finally:
        torch.set_num_threads(threads)


# Small kernels whose only parallelism is ATen's parallel loops: they run on
# whatever intra-op thread count the thread that runs them has.
LOOP_KERNELS = {
    "sum": lambda t: t.sum(),
    "mean": lambda t: t.mean(dim=1),
    "prod": lambda t: (t / 4 + 1).prod(dim=0),
    "amax": lambda t: t.amax(dim=1, keepdim=True),
    "argmin": lambda t: t.argmin(),
    "any": lambda t: (t > 1.5).any(dim=0),
    "pointwise": lambda t: t * 2 + 1,
    "copy_to_double": lambda t: t.t().to(torch.float64),
    "fill": lambda t: t.clone().fill_(3.5),
}


@pytest.mark.parametrize("kernel", sorted(LOOP_KERNELS))
def test_a_small_loop_kernel_on_a_host_of_several_threads_gives_cpus_result_and_leaves_its_count(foo, kernel):
    cpu = torch.randn(16, 24)
    x = cpu.to("foo")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        got = on_the_waiting_host(lambda: LOOP_KERNELS[kernel](x), lambda y: y.cpu(), kernels=1)
        assert torch.get_num_threads() == 2
        on_executor = LOOP_KERNELS[kernel](x)
        foo.synchronize()
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        expected = LOOP_KERNELS[kernel](cpu)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(got, expected)
    assert torch.equal(on_executor.cpu(), expected)


def test_a_profiled_kernel_run_on_the_host_is_on_the_device_rows_only(foo):
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(16, 8, device="foo")

    def launch():
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
        prof.__enter__()
        torch.nn.functional.layer_norm(x, (8,)).sum()
        return prof

    def wait(prof):
        foo.synchronize()
        prof.__exit__(None, None, None)
        return prof.events()

    events = on_the_waiting_host(launch, wait, kernels=2)
    on_device = [e.name for e in events if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert any(n.startswith("foo_kernel<aten::native_layer_norm") for n in on_device), on_device
    assert any(n.startswith("foo_kernel<aten::sum") for n in on_device), on_device
    # The host's row has the operator once: not the CPU operators its kernel
    # called (with the host's profiler state, those were recorded there too).
    on_host = [e.name for e in events if e.device_type == torch.autograd.DeviceType.CPU]
    assert on_host.count("aten::native_layer_norm") == 1, on_host
    assert "aten::copy_" not in on_host, on_host


KERNEL_WARNING = "a warning from inside a kernel"


def test_a_kernels_warning_on_the_host_is_raised_once_by_the_wait(foo):
    def launch():
        caught = warnings.catch_warnings(record=True)
        seen = caught.__enter__()
        warnings.simplefilter("always")
        _C._warn_in_kernel(KERNEL_WARNING)  # a kernel that warns as it runs, as a CPU kernel's loop would
        return caught, seen

    def wait(launched):
        caught, seen = launched
        assert not [w for w in seen if KERNEL_WARNING in str(w.message)]  # not run yet
        foo.synchronize()
        caught.__exit__(None, None, None)
        return seen

    seen = on_the_waiting_host(launch, wait, kernels=1)
    found = [str(w.message) for w in seen if KERNEL_WARNING in str(w.message)]
    assert len(found) == 1 and found[0].startswith("foo::_warn_in_kernel"), [str(w.message) for w in seen]


def test_a_failure_in_work_the_host_ran_is_raised_by_the_wait_once(foo):
    x = torch.arange(3.0, device="foo")
    idx = torch.tensor([10], device="foo")
    foo.synchronize()

    def wait(_):
        with pytest.raises(RuntimeError, match=r"aten::gather.*out of bounds"):
            foo.current_stream().synchronize()
        foo.synchronize()  # reported once: the device is clean again

    on_the_waiting_host(lambda: torch.gather(x, 0, idx), wait, kernels=1)
    assert (torch.arange(3.0, device="foo") + 1).cpu().tolist() == [1.0, 2.0, 3.0]


def test_a_graph_replay_runs_on_the_waiting_host(foo):
    x = torch.zeros(4, device="foo")
    s = foo.Stream()
    s.wait_stream(foo.current_stream())
    g = foo.FooGraph()
    with foo.graph(g, stream=s):
        x.add_(1)
        x.mul_(2)
    foo.synchronize()

    def launch():
        x.zero_()
        g.replay()

    def wait(_):
        foo.synchronize()
        return x.cpu().tolist()

    assert on_the_waiting_host(launch, wait, kernels=2) == [2.0] * 4


# Host reads: each waits for the stream, so the host runs the kernel that
# makes the value it then reads.
READS = {
    "item": lambda y: y.sum().item(),
    "nonzero": lambda y: torch.nonzero(y > 0).cpu().tolist(),
    "masked_select": lambda y: torch.masked_select(y, y > 0).cpu().tolist(),
    "boolean_index": lambda y: y[y < 0].cpu().tolist(),
    "unique": lambda y: [t.cpu().tolist() for t in torch.unique(y.abs(), return_inverse=True, return_counts=True)],
}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_read_of_work_the_host_ran_gives_its_result(foo, read):
    v = torch.arange(-4.0, 6.0, device="foo")
    foo.synchronize()
    got = on_the_waiting_host(lambda: v * 3 - 1, lambda y: READS[read](y), kernels=1)
    assert got == READS[read](torch.arange(-4.0, 6.0) * 3 - 1)


@pytest.mark.parametrize("read", sorted(READS))
def test_a_failure_in_work_the_host_ran_is_raised_once_by_the_read_that_waited(foo, read):
    x = torch.arange(3.0, device="foo")
    idx = torch.tensor([10], device="foo")
    foo.synchronize()

    def launch():
        torch.gather(x, 0, idx)
        return x + 1

    def wait(y):
        with pytest.raises(RuntimeError, match=r"aten::gather.*out of bounds"):
            READS[read](y)
        return READS[read](y)  # reported once: the same read now succeeds

    assert on_the_waiting_host(launch, wait, kernels=1) == READS[read](torch.arange(3.0) + 1)


# ---- in a child process

BLOCKING = {"FOO_SIM_LAUNCH_BLOCKING": "1"}
COUNTING = """
    import json, torch
    from torch_foo import _C
    counted_from = _C._host_work_count()
    def ran():
        return _C._host_work_count() - counted_from
"""


def test_a_failure_in_work_the_host_ran_at_a_blocking_launch_names_the_launch():
    out = run_python_json(COUNTING + """
    x = torch.arange(3.0, device="foo")
    idx = torch.tensor([10], device="foo")
    before = ran()
    try:
        torch.gather(x, 0, idx)
        message = None
    except RuntimeError as e:
        message = str(e)
    print(json.dumps({"ran": ran() - before, "message": message}))
    """, env=BLOCKING)
    assert out["ran"] == 1
    assert "out of bounds" in out["message"] and "<string>" in out["message"], out["message"]


def test_the_launch_delay_still_applies_to_work_the_host_runs():
    out = run_python_json(COUNTING + """
    import time
    x = torch.ones(4, device="foo")
    before = ran()
    start = time.monotonic()
    x.add_(1).sum().item()
    print(json.dumps({"ran": ran() - before, "seconds": time.monotonic() - start}))
    """, env={"FOO_SIM_LAUNCH_DELAY_US": "100000", **BLOCKING})
    # add, sum and the copy back each start 100 ms late.
    assert out["ran"] == 3
    assert out["seconds"] >= 0.3


def test_a_missing_synchronization_is_still_a_race_with_host_work():
    # The detector judges the order the program guarantees when it queues
    # the work, so which thread runs it changes nothing.
    out = run_python_json("""
    import json, torch
    foo = torch.foo
    x = torch.zeros(64, device="foo")
    foo.synchronize()
    side = foo.Stream()
    x.add_(1)                              # on the default stream
    with foo.stream(side):
        y = x * 2                          # on the side stream, without waiting for the add
    side.synchronize()
    foo.synchronize()
    print(json.dumps([r["message"] for r in foo.race_reports()]))
    """, env={"FOO_SIM_RACE_CHECK": "1"})
    assert any("race on" in r for r in out), out


def test_a_correct_program_run_on_the_host_makes_no_race_report():
    out = run_python_json(COUNTING + """
    foo = torch.foo
    side = foo.Stream()
    x = torch.zeros(64, device="foo")
    for _ in range(20):
        x.add_(1)
        side.wait_stream(foo.current_stream())
        with foo.stream(side):
            y = x * 2
        foo.current_stream().wait_stream(side)
        y.sum().item()
        torch.nonzero(x > 0)
    print(json.dumps({"ran": ran(), "reports": [r["message"] for r in foo.race_reports()]}))
    """, env={"FOO_SIM_RACE_CHECK": "1", **BLOCKING})
    assert out["ran"] >= 60 and out["reports"] == [], out


def test_a_host_on_several_threads_runs_no_small_kernel_ahead_of_a_large_one_on_a_busy_stream(foo):
    # The large kernel (not serial) is left to an executor behind a sleeping
    # one; the small one reading its result must still run after it, though
    # the waiting host may run small kernels itself.
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for _ in range(5):
            big = torch.ones(256, 256, device="foo")
            torch.foo._sleep(20)
            big.mul_(2)
            assert big[0, :4].sum().item() == 8
    finally:
        torch.set_num_threads(threads)
