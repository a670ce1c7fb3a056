"""torch.profiler with ProfilerActivity.PrivateUse1 records foo's kernels,
copies and launches with the times foo_sim's executors took, on their
devices and streams, linked to the operators that launched them."""

import json

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _kernels(prof, name=None):
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1
            and (name is None or e.name == name)]


def test_matmul_chain_on_two_streams(foo):
    a = torch.randn(256, 256, device="foo")
    streams = [foo.Stream(), foo.Stream()]
    for s in streams:
        s.wait_stream(foo.current_stream())
    with profile(activities=ACTIVITIES) as prof:
        for s in streams:
            with foo.stream(s):
                x = a
                for _ in range(5):
                    x = x @ a
    kernels = _kernels(prof, "foo_kernel<aten::mm>")
    assert len(kernels) == 10
    rows = {}
    for k in kernels:
        assert k.device_index == 0
        assert k.time_range.elapsed_us() > 0
        rows.setdefault(k.device_resource_id, []).append(k)
    assert len(rows) == 2, "each stream has its own row"
    for chain in rows.values():
        # A stream runs its kernels one after the other, in launch order.
        chain.sort(key=lambda k: k.time_range.start)
        assert all(prev.time_range.end <= nxt.time_range.start for prev, nxt in zip(chain, chain[1:]))
    # Each kernel belongs to the aten::mm that launched it, and ran after that call began.
    mms = [e for e in prof.events() if e.name == "aten::mm" and e.device_type == DeviceType.CPU]
    assert len(mms) == 10
    for op in mms:
        assert [k.name for k in op.kernels] == ["foo_kernel<aten::mm>"]
        assert op.device_time_total > 0
    launched = sorted(op.time_range.start for op in mms)
    started = sorted(k.time_range.start for k in kernels)
    assert all(s >= l for s, l in zip(started, launched))


def test_key_averages_and_record_function_get_device_time(foo):
    a = torch.randn(128, 128, device="foo")
    with profile(activities=ACTIVITIES) as prof:
        with record_function("my_block"):
            b = (a @ a).relu()
            foo._sleep(5)  # a kernel launched directly inside the range, with no operator
        b.sum().item()
    averages = {e.key: e for e in prof.key_averages() if e.device_type == DeviceType.CPU or "kernel" in e.key}
    assert averages["aten::mm"].self_device_time_total > 0
    assert averages["aten::relu"].self_device_time_total > 0
    assert averages["foo_kernel<aten::mm>"].device_time_total > 0
    block = averages["my_block"]
    assert block.device_time_total >= averages["foo_kernel<foo::_sleep>"].device_time_total > 0
    assert block.device_time_total > averages["aten::mm"].device_time_total
    table = prof.key_averages().table(sort_by="self_device_time_total")
    assert "foo_kernel<aten::mm>" in table
    # The range on the device row spans its kernels and is not counted twice.
    cpu_block = next(e for e in prof.key_averages() if e.key == "my_block" and e.device_type == DeviceType.CPU)
    kernels_inside = sum(averages[k].device_time_total for k in
                         ("foo_kernel<aten::mm>", "foo_kernel<aten::relu>", "foo_kernel<foo::_sleep>"))
    assert cpu_block.device_time_total == pytest.approx(kernels_inside, rel=1e-6)
    (span,) = [e for e in prof.events() if e.name == "my_block" and e.device_type == DeviceType.PrivateUse1]
    assert span.is_user_annotation and span.time_range.elapsed_us() >= kernels_inside * 0.999


def test_copies_are_recorded_with_their_direction(foo):
    host = torch.randn(1 << 16)
    with profile(activities=ACTIVITIES) as prof:
        d = host.to("foo")
        back = d.cpu()
    assert torch.equal(back, host)
    names = [k.name for k in _kernels(prof)]
    assert "Memcpy HtoD" in names and "Memcpy DtoH" in names
    copy_op = next(e for e in prof.events() if e.name == "aten::_to_copy" or e.name == "aten::copy_")
    assert copy_op.device_time_total > 0


def test_copy_across_devices_is_a_peer_copy(foo):
    src = torch.randn(1 << 16, device="foo:0")
    with profile(activities=ACTIVITIES) as prof:
        dst = src.to("foo:1")
        foo.synchronize(1)
    assert torch.equal(dst.cpu(), src.cpu())
    assert "Memcpy PtoP" in [k.name for k in _kernels(prof)]


def test_copies_of_one_dense_layout_move_bytes(foo):
    # Channels-last on both sides: one block of memory each, in the same
    # order, so every direction is a plain move of bytes (as CUDA's memcpy
    # is then), not an elementwise copy kernel; the values come out right.
    host = torch.randn(4, 8, 16, 16).contiguous(memory_format=torch.channels_last)
    with profile(activities=ACTIVITIES) as prof:
        d = host.to("foo")
        same = torch.empty_like(d).copy_(d)
        other = d.to("foo:1")
        back = torch.empty_like(host).copy_(other)
        foo.synchronize(0)
        foo.synchronize(1)
    for t in (d, same, other, back):
        assert t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()
        assert torch.equal(t.cpu(), host)
    names = [k.name for k in _kernels(prof)]
    assert {"Memcpy HtoD", "Memcpy DtoD", "Memcpy PtoP", "Memcpy DtoH"} <= set(names), names
    assert not [n for n in names if "copy_" in n], names


def test_chrome_trace_has_stream_rows_and_flows(foo, tmp_path):
    a = torch.randn(64, 64, device="foo")
    side = foo.Stream()
    side.wait_stream(foo.current_stream())
    with profile(activities=ACTIVITIES) as prof:
        (a @ a).sum()
        with foo.stream(side):
            a.mul(2)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("foo_kernel<")]
    assert "foo_kernel<aten::mm>" in {e["name"] for e in kernels}
    assert any(e["name"].startswith("foo_kernel<aten::mul") for e in kernels)  # with its overload
    assert {e["pid"] for e in kernels} == {0}
    assert len({e["tid"] for e in kernels}) == 2
    names = {(e["pid"], e["args"]["name"]) for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    assert (0, "foo 0") in names
    threads = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"
               and e["pid"] == 0}
    assert "foo stream 0 (default)" in threads
    launches = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    assert launches and all(e["pid"] != 0 for e in launches)
    flows = [e for e in events if e.get("cat") == "ac2g"]
    starts = {e["id"] for e in flows if e["ph"] == "s"}
    ends = {e["id"] for e in flows if e["ph"] == "f"}
    assert starts and starts == ends


def test_event_timing_and_profiler_agree_on_a_sleeping_kernel(foo):
    start, end = foo.Event(enable_timing=True), foo.Event(enable_timing=True)
    with profile(activities=ACTIVITIES) as prof:
        # A kernel first, so that an executor is already running when the
        # start event is reached: its wake-up is then in neither time.
        torch.ones(1 << 16, device="foo").mul_(2)
        start.record()
        foo._sleep(50)
        end.record()
    end.synchronize()
    event_ms = start.elapsed_time(end)
    (kernel,) = _kernels(prof, "foo_kernel<foo::_sleep>")
    profiler_ms = kernel.time_range.elapsed_us() / 1000
    # The profiler's kernel lies within the events around it, however loaded
    # the machine (up to its whole microseconds, and its wall clock against
    # the events' steady clock: well within 0.1%).
    assert 50 <= profiler_ms <= event_ms * 1.001 + 0.002


def test_nothing_is_recorded_outside_a_session(foo):
    a = torch.randn(32, device="foo")
    a.add_(1)
    foo.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        a.mul_(2)
    a.add_(1)  # after the session: not in it, and not in the next one
    foo.synchronize()
    (kernel,) = _kernels(prof)
    assert kernel.name.startswith("foo_kernel<aten::mul")
    with profile(activities=ACTIVITIES) as prof2:
        a.sub_(1)
    (kernel,) = _kernels(prof2)
    assert kernel.name.startswith("foo_kernel<aten::sub")


def test_cpu_only_profiling_records_no_foo_activity(foo):
    a = torch.randn(32, device="foo")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        a.mul_(2)
    foo.synchronize()
    assert _kernels(prof) == []
    assert any(e.name == "aten::mul_" for e in prof.events())


def test_a_failing_kernel_is_reported_once_and_profiling_goes_on(foo):
    x = torch.arange(3.0, device="foo")
    # torch's profiler synchronizes the device when it stops (as for CUDA):
    # that reports the failure; the trace is still complete.
    with pytest.raises(RuntimeError, match="out of bounds"):
        with profile(activities=ACTIVITIES) as prof:
            torch.gather(x, 0, torch.tensor([10], device="foo"))
    foo.synchronize()  # reported once
    # torch left its profiler on (the raise came before its disable, as with
    # CUDA); a new session replaces it.
    with profile(activities=ACTIVITIES) as prof:
        y = x * 2
    assert len(_kernels(prof)) == 1
    assert y.sum().item() == 6


def test_profile_memory_records_foo_allocations(foo):
    foo.empty_cache()  # no cached block of another size to be reused unsplit
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        x = torch.empty(1 << 20, device="foo")  # 4 MiB, a multiple of the allocator's rounding
        y = torch.empty(1 << 18, device="foo")
        del y
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::empty"].device_memory_usage == 5 << 20
    assert averages["aten::empty"].self_device_memory_usage == 5 << 20
    records = [e for e in prof.events() if e.name == "[memory]"]
    assert sum(e.device_memory_usage for e in records) == -(1 << 20)  # y's free
    del x


def test_profile_memory_counts_outputs_as_their_operators_own(foo):
    # As with CUDA's kernels, an operator allocates its outputs itself, not
    # through a child aten::empty: the memory is the operator's self memory.
    x = torch.ones(1 << 20, device="foo")
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        y = x * 2                                       # a structured kernel
        z = torch.nn.functional.softplus(x)             # another
        w = torch.special.airy_ai(x[:1 << 18])          # the CPU fallback
    averages = {e.key: e for e in prof.key_averages()}
    for name, nbytes in (("aten::mul", 4 << 20), ("aten::softplus", 4 << 20), ("aten::special_airy_ai", 1 << 20)):
        assert averages[name].self_device_memory_usage == nbytes, name
    assert not any(k.startswith("aten::empty") for k in averages), sorted(averages)
    del y, z, w


@pytest.mark.parametrize("use_kineto", [False, True])
def test_autograd_profiler_with_use_device(foo, use_kineto):
    """torch.autograd.profiler.profile(use_device="foo"): without Kineto, each
    operator is timed by events on the stream around it (the legacy
    fallback); with Kineto, by the same plugin as torch.profiler."""
    a = torch.randn(256, 256, device="foo")
    foo.synchronize()
    with torch.autograd.profiler.profile(use_device="foo", use_kineto=use_kineto) as prof:
        b = a @ a
        foo._sleep(20)
        b.sum().item()
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::mm"].device_time_total > 0
    if use_kineto:
        assert averages["foo_kernel<foo::_sleep>"].device_time_total >= 20_000
