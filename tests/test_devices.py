"""torch.foo device management: current device, guards, properties, sync."""

import threading

import pytest
import torch

from conftest import held_stream, run_python_json


def test_count_and_properties(foo):
    assert foo.is_available() and foo.device_count() == 2
    props = foo.get_device_properties(1)
    assert props.total_memory == 8 << 30  # FOO_SIM_DEVICE_MEMORY=8GiB
    assert props.executor_count == 4 == props.multi_processor_count
    assert foo.get_device_name("foo:1") == props.name and "foo" in props.name
    assert foo.get_device_capability(torch.device("foo", 0)) == (props.major, props.minor) == (1, 0)
    assert "total_memory=8192MB" in repr(props)


def test_set_device_is_per_thread(foo):
    foo.set_device(1)
    assert foo.current_device() == 1
    seen = []
    t = threading.Thread(target=lambda: seen.append(foo.current_device()))
    t.start()
    t.join()
    assert seen == [0]
    foo.set_device("foo:0")
    assert foo.current_device() == 0
    foo.set_device(-1)  # negative: no-op, as torch.cuda.set_device
    assert foo.current_device() == 0


def test_device_context_restores_also_on_exception(foo):
    with foo.device(1):
        assert foo.current_device() == 1
        with foo.device("foo:0"):
            assert foo.current_device() == 0
        assert foo.current_device() == 1
    assert foo.current_device() == 0
    with pytest.raises(KeyError):
        with foo.device(1):
            raise KeyError("leaves the block")
    assert foo.current_device() == 0
    with foo.device(None):
        assert foo.current_device() == 0


def test_device_of_follows_tensors_when_they_are_on_foo(foo):
    with foo.device_of(torch.ones(1)):  # a CPU tensor leaves the device alone
        assert foo.current_device() == 0


@pytest.mark.parametrize("bad", [2, 7, -1])
def test_out_of_range_index_names_value_and_range(foo, bad):
    message = rf"foo error: invalid device ordinal\. The device index is out of range: {bad} \(valid indices are 0 to 1"
    with pytest.raises(RuntimeError, match=message):
        foo.get_device_properties(bad)
    if bad >= 0:
        with pytest.raises(RuntimeError, match=rf"invalid device ordinal\. The device index is out of range: {bad} \("):
            foo.set_device(bad)
        with pytest.raises(RuntimeError, match=rf"invalid device ordinal\. The device index is out of range: {bad} \("):
            foo.synchronize(bad)
    assert foo.current_device() == 0


@pytest.mark.parametrize("bad", ["cuda:0", torch.device("cpu"), 1.5, "foo:x"])
def test_wrong_device_type_is_a_value_error(foo, bad):
    with pytest.raises((ValueError, RuntimeError), match=r"foo device|Invalid device string"):
        foo.set_device(bad)


def test_synchronize_waits_for_the_named_device_only(foo):
    with held_stream(foo.current_stream(1)) as still_held:
        with foo.device(1):
            foo._sleep(200)                   # done after synchronize("foo:1") only if it waited
        foo.synchronize(0)                    # returns although foo:1 is held
        assert still_held() and not foo.current_stream(1).query()
    foo.synchronize("foo:1")
    assert foo.current_stream(1).query()
    assert foo.current_device() == 0


def test_negative_device_indices_mean_what_they_mean_on_cuda(foo):
    """-1 is the current device where CUDA's C++ takes it so; other negative
    indices are refused, except where torch.cuda's device context ignores
    them (synchronize, Stream)."""
    foo.set_device(1)
    try:
        foo._sleep(300)
        foo.synchronize(-1)  # the current device, foo:1
        assert foo.current_stream(1).query()
        assert foo.current_stream(-1).device == torch.device("foo:1")
        assert foo.Stream(device=-2).device == torch.device("foo:1")
        with pytest.raises(RuntimeError, match=r"invalid device ordinal\. The device index is out of range: -2 \("):
            foo.current_stream(-2)
        with pytest.raises(RuntimeError, match=r"invalid device ordinal\. The device index is out of range: -2 \("):
            foo.default_stream(-2)
        with pytest.raises(RuntimeError, match=r"negative"):
            foo.get_rng_state(-1)
        with pytest.raises(RuntimeError, match=r"negative"):
            foo.set_rng_state(foo.get_rng_state(1), -1)
    finally:
        foo.set_device(0)


def test_operator_queues_on_its_tensors_device_not_the_current_one(foo):
    # x lives on foo:1, whose current stream is a side stream held shut by
    # a gate; foo:0 is the current device when x.mul_ is called.
    # The multiply must queue on foo:1's current stream, after the fill:
    # run anywhere else it would run at once, before the fill, and x would
    # end as 5 instead of 15.
    x = torch.ones(1000, device="foo:1")
    foo.synchronize(1)  # the default stream of foo:1 is idle from here on
    side = foo.Stream(device="foo:1")
    foo.set_stream(side)
    try:
        with held_stream() as still_held:
            x.fill_(5)
            foo.set_device(0)
            x.mul_(3)
            assert foo.current_device() == 0
            assert still_held() and not side.query()
            assert foo.default_stream(1).query()
        side.synchronize()
        assert torch.equal(x.cpu(), torch.full((1000,), 15.0))
    finally:
        foo.set_stream(foo.default_stream(1))
        foo.set_device(0)


@pytest.mark.parametrize("layout", ["plain bytes", "channels-last", "converted", "strided"])
def test_copy_across_devices_waits_on_both_sides(foo, layout):
    # The destination's stream is held up, so the copy runs late. It must
    # still read the source as it was when copy_ was called: the source's
    # stream may not overwrite it (fill_ below) until the copy has run.
    n = 1 << 18
    src = torch.ones(2 * n, device="foo:0")
    dst = torch.zeros(2 * n, device="foo:1", dtype=torch.float64 if layout == "converted" else torch.float32)
    src_part, dst_part = (src[::2], dst[::2]) if layout == "strided" else (src, dst)
    if layout == "channels-last":
        def channels_last(t):
            return t.as_strided((8, 16, 64, 32), (32768, 1, 512, 16))
        src_part, dst_part = channels_last(src), channels_last(dst)
    foo.synchronize(0)
    foo.synchronize(1)
    with held_stream(foo.current_stream(1)) as still_held:
        dst_part.copy_(src_part)
        src.fill_(2.0)
        assert still_held() and not foo.default_stream(0).query()  # the fill waits for the copy, which waits for the gate
    expected = torch.ones(dst_part.shape, dtype=dst.dtype)
    assert torch.equal(dst_part.cpu(), expected)
    assert torch.equal(src.cpu(), torch.full((2 * n,), 2.0))


@pytest.mark.parametrize("count", [1, 2, 4])
def test_every_device_works_independently(count):
    out = run_python_json(f"""
        import json, torch
        results = []
        for d in range(torch.foo.device_count()):
            torch.foo.set_device(d)
            s = torch.foo.Stream()
            start, end = torch.foo.Event(enable_timing=True), torch.foo.Event(enable_timing=True)
            with torch.foo.stream(s):
                start.record(); torch.foo._sleep(20); end.record()
            end.synchronize()
            results.append([s.device_index, torch.foo.current_stream().device_index, start.elapsed_time(end) >= 19])
        torch.foo.set_device(0)
        print(json.dumps([torch.foo.device_count(), torch.accelerator.device_count(), results]))
    """, env={"FOO_SIM_DEVICE_COUNT": str(count)})
    assert out == [count, count, [[d, d, True] for d in range(count)]]


def test_cuda_style_device_queries(foo):
    assert foo.is_bf16_supported()
    assert foo.can_device_access_peer(0, 1) and foo.can_device_access_peer("foo:1", torch.device("foo", 0))
    assert not foo.can_device_access_peer(0, 0)
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        foo.can_device_access_peer(0, foo.device_count())
    x = torch.empty(1 << 20, device="foo:1")
    segments = [s for s in foo.memory_snapshot() if s["device"] == 1]
    assert any(b["address"] == x.data_ptr() and b["state"] == "active_allocated" for s in segments for b in s["blocks"])
    del x
    foo.reset_max_memory_allocated(1)
    assert foo.max_memory_allocated(1) == foo.memory_allocated(1)


def test_default_generators_and_process_list(foo):
    # torch.cuda.default_generators: one per device, by index, the very
    # generators random operators on that device draw from.
    gens = foo.default_generators
    assert len(gens) == foo.device_count() and [g.device for g in gens] == [
        torch.device("foo", i) for i in range(foo.device_count())]
    gens[1].manual_seed(7)
    a = torch.rand(4, device="foo:1")
    foo.manual_seed_all(7)
    assert torch.equal(torch.rand(4, device="foo:1").cpu(), a.cpu())
    # list_gpu_processes names this process with what it reserves there.
    x = torch.empty(3 << 20, dtype=torch.uint8, device="foo:1")
    listing = foo.list_gpu_processes("foo:1").splitlines()
    assert listing[0] == "GPU:1"
    pid, mb = listing[1].split()[1], float(listing[1].split()[3])
    assert int(pid) == __import__("os").getpid() and mb == pytest.approx(foo.memory_reserved(1) / 2**20, abs=1e-3)
    assert mb >= 3
    del x


@pytest.mark.parametrize("call", ["set_device", "synchronize", "get_device_properties", "current_stream",
                                  "default_stream", "get_rng_state"])
def test_device_indices_beyond_the_index_type_are_invalid_not_truncated(foo, call):
    # 257 would have been device 1 after truncation to c10::DeviceIndex.
    with pytest.raises(RuntimeError, match=r"invalid device ordinal\. The device index is out of range: 257 \("):
        getattr(foo, call)(257)
    assert foo.current_device() == 0
