"""torch.foo events: timing, synchronization, cross-device waits, errors."""

import time

import pytest
import torch

from conftest import held_stream


def _timed_sleep(foo, ms, event_type, stream):
    """Events around a kernel sleeping ``ms`` on ``stream``, and the host's time around the whole (ms)."""
    start, end = event_type(enable_timing=True), event_type(enable_timing=True)
    host_start = time.monotonic()
    start.record(stream)
    with stream:
        foo._sleep(ms)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end), (time.monotonic() - host_start) * 1000


def test_elapsed_time_measures_a_sleep(foo):
    device_ms, host_ms = _timed_sleep(foo, 50, foo.Event, foo.current_stream())
    # The device's interval holds the sleep and lies within the host's
    # (both clocks are the steady clock), however loaded the machine.
    assert 49.9 <= device_ms <= host_ms


def test_query_and_synchronize(foo):
    e = foo.Event()
    assert e.query()  # never recorded
    with held_stream() as still_held:
        e.record()
        assert still_held() and not e.query()
    e.synchronize()
    assert e.query()


def test_elapsed_time_needs_timing_and_completion(foo):
    untimed, timed = foo.Event(), foo.Event(enable_timing=True)
    untimed.record()
    timed.record()
    foo.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        untimed.elapsed_time(timed)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        foo.Event(enable_timing=True).elapsed_time(timed)
    with held_stream():
        late = foo.Event(enable_timing=True)
        late.record()
        with pytest.raises(RuntimeError, match="must be completed"):
            timed.elapsed_time(late)
    late.synchronize()
    assert timed.elapsed_time(late) > 0
    # As CUDA: no timing between two devices' events, whichever API made them.
    for make in (lambda: foo.Event(enable_timing=True), lambda: torch.Event("foo", enable_timing=True)):
        on0, on1 = make(), make()
        on0.record(foo.current_stream(0))
        on1.record(foo.current_stream(1))
        foo.synchronize(0)
        foo.synchronize(1)
        with pytest.raises(RuntimeError, match="start event belongs to device 0 and the end event to device 1"):
            on0.elapsed_time(on1)


def test_a_stream_may_wait_on_an_event_of_another_device(foo):
    s0, s1 = foo.Stream(0), foo.Stream(1)
    with held_stream(s1) as still_held:
        on1 = s1.record_event()
        s0.wait_event(on1)  # allowed, as on CUDA
        after = foo.Event()
        after.record(s0)
        assert still_held() and not after.query() and not s0.query()  # s0 waits for s1
    after.synchronize()
    assert on1.query()


def test_recording_on_another_devices_stream_is_refused(foo):
    e = foo.Event()
    e.record(foo.Stream(0))
    with pytest.raises(RuntimeError, match="Event device index 0 does not match recording stream's device index 1"):
        e.record(foo.Stream(1))


def test_generic_torch_event_and_stream_work_on_foo(foo):
    device_ms, host_ms = _timed_sleep(foo, 30, lambda **kw: torch.Event("foo", **kw), torch.Stream("foo:1"))
    assert 29.9 <= device_ms <= host_ms
