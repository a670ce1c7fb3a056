"""torch.foo streams: pools, current stream, contexts, concurrency, priorities."""

import threading

import pytest
import torch

from conftest import held_stream, run_python_json


def test_default_and_current_stream(foo):
    default = foo.default_stream()
    assert isinstance(default, foo.Stream) and isinstance(default, torch.Stream)
    assert foo.current_stream() == default and default.stream_id == 0
    assert foo.default_stream(1).device == torch.device("foo:1")
    assert foo.default_stream(1) != default


def test_pool_hands_out_streams_round_robin(foo):
    ids = {foo.Stream().stream_id for _ in range(32)}
    assert len(ids) == 32
    assert foo.Stream().stream_id in ids  # the 33rd comes round again


def test_priorities_follow_cuda_and_are_clamped(foo):
    least, greatest = foo.Stream.priority_range()
    assert least == 0 and greatest < 0
    assert foo.Stream(priority=greatest).priority == greatest
    assert foo.Stream(priority=greatest - 5).priority == greatest
    assert foo.Stream(priority=7).priority == least
    assert foo.Stream().priority == 0
    assert foo.Stream._wrap(torch.Stream("foo", priority=-2)).priority == -2


def test_set_stream_and_stream_context_restore(foo):
    s = foo.Stream()
    foo.set_stream(s)
    assert foo.current_stream() == s
    foo.set_stream(foo.default_stream())
    with foo.stream(s):
        assert foo.current_stream() == s
    assert foo.current_stream() == foo.default_stream()
    with foo.stream(None):
        assert foo.current_stream() == foo.default_stream()
    with pytest.raises(ValueError, match="expects a foo stream, got a stream of device cpu"):
        foo.set_stream(torch.Stream("cpu"))
    assert foo.current_stream() == foo.default_stream()


def test_stream_context_on_another_device_restores_both_devices(foo):
    s1 = foo.Stream(1)
    with pytest.raises(ZeroDivisionError):
        with foo.stream(s1):
            assert foo.current_device() == 1
            assert foo.current_stream() == s1
            1 / 0
    assert foo.current_device() == 0
    assert foo.current_stream(0) == foo.default_stream(0)
    assert foo.current_stream(1) == foo.default_stream(1)


def test_torch_stream_with_block_switches_and_restores(foo):
    s = torch.Stream("foo:1")
    with s:
        assert torch.accelerator.current_stream(1) == s
    assert torch.accelerator.current_stream(1).stream_id == 0


def test_each_thread_and_device_has_its_own_current_stream(foo):
    s0, s1 = foo.Stream(0), foo.Stream(1)
    foo.set_stream(s1)
    foo.set_device(0)
    foo.set_stream(s0)
    assert foo.current_stream(0) == s0 and foo.current_stream(1) == s1
    seen = []
    t = threading.Thread(target=lambda: seen.append((foo.current_stream(0), foo.current_stream(1))))
    t.start()
    t.join()
    assert seen == [(foo.default_stream(0), foo.default_stream(1))]


def test_query_and_synchronize(foo):
    s = foo.Stream()
    with held_stream(s) as still_held:
        with foo.stream(s):
            foo._sleep(100)                  # done after synchronize only if it waited
        assert still_held() and not s.query()
        assert foo.current_stream().query()  # other streams are unaffected
    s.synchronize()
    assert s.query()


def test_host_does_not_wait_for_queued_work(foo):
    x = torch.zeros(1000, device="foo")
    with held_stream() as still_held:
        x.add_(1)                            # a launch that waited would wait for the gate, and fail
        assert still_held() and not foo.current_stream().query()
    foo.current_stream().synchronize()
    assert foo.current_stream().query()
    assert x.cpu().eq(1).all()


def test_two_streams_run_at_once(foo):
    # a is held by a gate queued first; b's work, queued after it, runs to
    # the end while a is still held. Run one after the other, b would wait
    # behind a's gate.
    a, b = foo.Stream(), foo.Stream()
    x = torch.zeros(1000, device="foo")
    foo.synchronize()
    with held_stream(a) as a_held:
        with foo.stream(b):
            x.add_(1)
        b.synchronize()
        assert a_held() and not a.query()
    a.synchronize()
    assert x.cpu().eq(1).all()


def test_wait_stream_orders_work_across_streams(foo):
    a, b = foo.Stream(0), foo.Stream(1)
    x = torch.zeros(4, device="foo:0")
    a.wait_stream(foo.current_stream())  # x's zero fill (on the default stream) first: the race detector's find
    with held_stream(a) as still_held:
        with foo.stream(a):
            x.add_(1)                    # written on a, late
        b.wait_stream(a)                 # across devices too; the host does not wait
        with foo.device(1), foo.stream(b):
            y = x.to("foo:1")            # on b: reads x only after a's add
        assert still_held() and not b.query()
    b.synchronize()
    assert a.query()
    assert y.cpu().tolist() == [1.0] * 4


def test_high_priority_stream_goes_first_when_executors_are_busy():
    out = run_python_json("""
        import json, torch
        foo = torch.foo
        least, greatest = foo.Stream.priority_range()
        blocker, low, high = foo.Stream(priority=least), foo.Stream(priority=least), foo.Stream(priority=greatest)
        x = torch.zeros(1, device="foo")
        foo.synchronize()
        with foo.stream(blocker):
            gate = foo._gate()            # the only executor is busy
        with foo.stream(low):             # low is queued first
            x.mul_(2)
        with foo.stream(high):
            x.add_(1)
        gate.open()
        foo.synchronize()
        print(json.dumps(x.item()))       # high, then low: (0 + 1) * 2; the other way round: 0 * 2 + 1
    """, env={"FOO_SIM_DEVICE_EXECUTORS": "1"})
    assert out == 2.0


def test_external_stream_wraps_a_foo_sim_stream(foo):
    from torch_foo import _C

    ptr = _C._raw_stream_create(1, 0)
    try:
        ext = foo.ExternalStream(ptr, device="foo:1")
        assert ext.foo_stream == ptr and ext.device_index == 1
        with held_stream(ext) as still_held:
            assert still_held() and not ext.query()
        ext.synchronize()
        with pytest.raises(RuntimeError, match="belongs to foo device 1, not to foo device 0"):
            foo.ExternalStream(ptr, device=0)
    finally:
        foo.synchronize(1)
        _C._raw_stream_destroy(ptr)


def test_bad_stream_arguments(foo):
    with pytest.raises(RuntimeError, match=r"invalid device ordinal\. The device index is out of range: 5 \("):
        foo.Stream(5)
    with pytest.raises(ValueError, match="Expected a foo device"):
        foo.Stream("cpu")
    with pytest.raises(ValueError, match="neither device nor priority"):
        foo.Stream(1, stream_id=0, device_index=0, device_type=foo.default_stream().device_type)
    with pytest.raises(RuntimeError, match="non-null"):
        foo.ExternalStream(0)


def test_many_python_threads_using_streams(foo):
    errors = []

    def worker(i):
        try:
            dev = i % 2
            foo.set_device(dev)
            s = foo.Stream(dev, priority=-(i % 3))
            for _ in range(20):
                with foo.stream(s):
                    foo._sleep(1)
                    e = foo.Event()
                    e.record()
                other = foo.Stream(dev)
                other.wait_event(e)
                assert foo.current_stream() == foo.default_stream(dev)
            s.synchronize()
            assert s.query()
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
