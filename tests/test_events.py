"""torch.foo events: timing, synchronization, cross-device waits, errors."""

import time

import pytest
import torch


def test_elapsed_time_measures_a_sleep(foo):
    start, end = foo.Event(enable_timing=True), foo.Event(enable_timing=True)
    start.record()
    foo._sleep(50)
    end.record()
    end.synchronize()
    assert end.query()
    assert 49.9 <= start.elapsed_time(end) < 65


def test_query_and_synchronize(foo):
    e = foo.Event()
    assert e.query()  # never recorded
    foo._sleep(100)
    e.record()
    assert not e.query()
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
    foo._sleep(200)
    late = foo.Event(enable_timing=True)
    late.record()
    with pytest.raises(RuntimeError, match="must be completed"):
        timed.elapsed_time(late)
    late.synchronize()
    assert timed.elapsed_time(late) >= 199
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
    start = foo.Event(enable_timing=True)
    start.record(s1)
    with foo.stream(s1):
        foo._sleep(150)
    on1 = s1.record_event()
    s0.wait_event(on1)  # allowed, as on CUDA
    after = foo.Event(enable_timing=True)
    after.record(s0)
    t0 = time.monotonic()
    after.synchronize()
    assert time.monotonic() - t0 >= 0.1
    assert s1.query()


def test_recording_on_another_devices_stream_is_refused(foo):
    e = foo.Event()
    e.record(foo.Stream(0))
    with pytest.raises(RuntimeError, match="Event device index 0 does not match recording stream's device index 1"):
        e.record(foo.Stream(1))


def test_generic_torch_event_and_stream_work_on_foo(foo):
    s = torch.Stream("foo:1")
    start, end = torch.Event("foo", enable_timing=True), torch.Event("foo", enable_timing=True)
    start.record(s)
    with s:
        foo._sleep(30)
    end.record(s)
    end.synchronize()
    assert 29.9 <= start.elapsed_time(end) < 60


def test_interprocess_events_are_not_supported(foo):
    with pytest.raises(NotImplementedError, match="interprocess"):
        foo.Event(interprocess=True)
