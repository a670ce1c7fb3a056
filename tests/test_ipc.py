"""Sharing foo tensors with spawned processes through torch.multiprocessing, as CUDA tensors are shared.

The test process is the producer or the consumer; the other side is a
spawned process that reports through a queue. Order across processes is
shown with a kernel the test holds (torch.foo._gate) and event queries,
never with timings. Every test that starts a process but one is `slow`:
left out of the quick run (docs/development.md).
"""
import gc
import glob
import multiprocessing
import pickle
import queue
import traceback
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

CTX = multiprocessing.get_context("spawn")


def _run(fn, results, args):
    try:
        fn(results, *args)
    except BaseException:  # noqa: B036 - the test process shows the child's failure
        results.put(("error", traceback.format_exc()))


def _start(fn, *args):
    """Runs ``fn(results, *args)`` in a spawned process; returns (process, results)."""
    results = CTX.Queue()
    p = CTX.Process(target=_run, args=(fn, results, args))
    p.start()
    return p, results


def _answer(p, results):
    """The child's next report; fails if it raised or exited without one."""
    while True:
        try:
            item = results.get(timeout=1)
        except queue.Empty:
            if p.exitcode is not None:
                pytest.fail(f"the child exited with code {p.exitcode} without answering")
            continue
        if isinstance(item, tuple) and len(item) == 2 and item[0] == "error":
            pytest.fail(f"the child failed:\n{item[1]}")
        return item


def _finish(p, results):
    p.join()
    assert p.exitcode == 0
    assert results.empty()


# ---- consumers (spawned) ----

def _describe(results, tensors):
    t = tensors.get()
    results.put({"device": str(t.device), "values": t.cpu().tolist(), "size": list(t.shape),
                 "stride": list(t.stride()), "offset": t.storage_offset(), "type": type(t).__name__,
                 "requires_grad": t.requires_grad})


def _add_one_in_place(results, tensors):
    t = tensors.get()
    t.add_(1)
    torch.foo.synchronize()
    results.put("written")


def _train_step(results, model, done):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1)
    torch.foo.synchronize()
    results.put("stepped")
    done.wait()


def _read_behind_the_producers_kernel(results, tensors, go_on):
    t = tensors.get()
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    host.copy_(t, non_blocking=True)
    copied = torch.foo.Event()
    copied.record()
    results.put(copied.query())  # the producer still holds its kernel
    go_on.wait()
    copied.synchronize()
    results.put(host.tolist())


def _hold_until_told(results, tensors, drop):
    t = tensors.get()
    allocated, reserved = torch.foo.memory_allocated(), torch.foo.memory_reserved()  # before any allocation here
    results.put({"allocated": allocated, "reserved": reserved, "sum": t.sum().item()})
    drop.wait()
    del t
    gc.collect()
    results.put("dropped")


def _pickle_again(results, tensors):
    t = tensors.get()
    try:
        ForkingPickler.dumps(t)
        results.put(None)
    except RuntimeError as e:
        results.put(str(e))


def _wait_for_event(results, event, go_on):
    results.put(event.query())
    stream = torch.foo.Stream()
    stream.wait_event(event)
    witness = torch.foo.Event()
    witness.record(stream)
    results.put(witness.query())
    go_on.wait()
    event.synchronize()
    witness.synchronize()
    results.put(event.query())


# ---- producers (spawned) ----

def _put_and_exit(results, tensors, received):
    t = torch.arange(6.0, device="foo").reshape(2, 3)
    tensors.put(t)
    received.wait()  # exits while the consumer still holds the tensor


def _pickle_and_exit(results):
    results.put(bytes(ForkingPickler.dumps(torch.ones(3, device="foo"))))


# ---- tests ----

@pytest.mark.slow
@pytest.mark.parametrize("what", ["tensor", "offset view", "strided view", "parameter", "empty"])
def test_a_foo_tensor_put_on_a_queue_arrives_with_its_values_and_layout(what):
    base = torch.arange(12.0, device="foo")
    t = {"tensor": base, "offset view": base[4:9], "strided view": base.view(3, 4)[:, ::2],
         "parameter": torch.nn.Parameter(base), "empty": torch.empty(0, device="foo")}[what]
    tensors = CTX.Queue()
    p, results = _start(_describe, tensors)
    tensors.put(t)
    got = _answer(p, results)
    _finish(p, results)
    assert got == {"device": "foo:0", "values": t.tolist(), "size": list(t.shape), "stride": list(t.stride()),
                   "offset": t.storage_offset(), "type": type(t).__name__, "requires_grad": t.requires_grad}


@pytest.mark.slow
def test_a_tensor_on_foo_1_arrives_on_foo_1():
    t = torch.arange(3.0, device="foo:1")
    tensors = CTX.Queue()
    p, results = _start(_describe, tensors)
    tensors.put(t)
    got = _answer(p, results)
    _finish(p, results)
    assert got["device"] == "foo:1" and got["values"] == [0.0, 1.0, 2.0]


@pytest.mark.slow
def test_a_consumers_write_is_seen_by_the_producer():
    t = torch.zeros(4, device="foo")
    tensors = CTX.Queue()
    p, results = _start(_add_one_in_place, tensors)
    tensors.put(t[1:3])
    assert _answer(p, results) == "written"
    _finish(p, results)
    assert t.tolist() == [0.0, 1.0, 1.0, 0.0]


@pytest.mark.slow
def test_workers_update_a_modules_shared_parameters_in_place():
    model = torch.nn.Linear(3, 2).to("foo")
    before = [p.detach().clone() for p in model.parameters()]
    done = CTX.Event()
    workers = [_start(_train_step, model, done) for _ in range(2)]
    for p, results in workers:
        assert _answer(p, results) == "stepped"
    done.set()
    for p, results in workers:
        _finish(p, results)
    for b, p in zip(before, model.parameters()):
        torch.testing.assert_close(p.detach(), b + 2)


def test_the_consumer_sees_the_work_queued_before_the_put_and_nothing_earlier():
    t = torch.zeros(4, device="foo")
    gate = torch.foo._gate()  # holds the current stream
    t.fill_(7)
    tensors, go_on = CTX.Queue(), CTX.Event()
    p, results = _start(_read_behind_the_producers_kernel, tensors, go_on)
    tensors.put(t)
    try:
        assert _answer(p, results) is False  # the consumer's copy waits for the producer's held kernel
    finally:
        gate.open()
        go_on.set()
    assert _answer(p, results) == [7.0] * 4
    _finish(p, results)


@pytest.mark.slow
def test_the_block_is_freed_once_the_consumer_let_go_and_ipc_collect_runs():
    gc.collect()  # other tests' garbage goes now, not between the measurements below
    torch.foo.synchronize()
    torch.foo.ipc_collect()
    size = 4 << 20
    start = torch.foo.memory_allocated()
    t = torch.ones(size // 4, device="foo")
    tensors, drop = CTX.Queue(), CTX.Event()
    p, results = _start(_hold_until_told, tensors, drop)
    tensors.put(t)
    held = _answer(p, results)
    assert held["sum"] == size // 4
    # Imported memory is not the consumer's: its allocator counts none of it.
    assert held["allocated"] == 0 and held["reserved"] == 0
    del t
    gc.collect()
    torch.foo.ipc_collect()
    assert torch.foo.memory_allocated() == start + size  # the consumer still holds it
    drop.set()
    assert _answer(p, results) == "dropped"
    _finish(p, results)
    torch.foo.ipc_collect()
    assert torch.foo.memory_allocated() == start


@pytest.mark.slow
def test_a_consumer_keeps_and_drops_a_tensor_whose_producer_exited():
    # As with CUDA, using it after the producer exited is not defined; on foo
    # the mapping stays until the consumer drops the tensor, which is clean.
    tensors, received = CTX.Queue(), CTX.Event()
    p, results = _start(_put_and_exit, tensors, received)
    t = tensors.get()
    assert t.device == torch.device("foo:0") and t.shape == (2, 3)
    received.set()
    p.join()
    assert p.exitcode == 0
    del t
    gc.collect()
    assert torch.arange(3.0, device="foo").sum().item() == 3.0
    # Nothing of the producer's stays behind in shared memory (its reference counters).
    assert not glob.glob(f"/dev/shm/torch_{p.pid}_*")


@pytest.mark.slow
def test_a_received_tensor_cannot_be_sent_on():
    tensors = CTX.Queue()
    p, results = _start(_pickle_again, tensors)
    tensors.put(torch.ones(2, device="foo"))
    message = _answer(p, results)
    _finish(p, results)
    assert message is not None and "received from another process" in message


def test_a_process_given_its_own_tensors_pickle_raises():
    data = ForkingPickler.dumps(torch.ones(2, device="foo"))
    with pytest.raises(RuntimeError, match="made by this process"):
        pickle.loads(data)


@pytest.mark.slow
def test_the_pickle_of_a_process_that_exited_raises():
    p, results = _start(_pickle_and_exit)
    data = _answer(p, results)
    _finish(p, results)
    with pytest.raises(RuntimeError, match=r"pid \d+\) has exited"):
        pickle.loads(data)


def test_a_garbled_handle_raises():
    rebuild, args = _reduce(torch.ones(2, device="foo"))  # what pickling it gives
    args = list(args)
    args[6] = bytes(64)  # the memory handle
    with pytest.raises(RuntimeError, match="not a foo_sim memory handle"):
        rebuild(*args)
    args[6] = b"short"
    with pytest.raises(ValueError, match="a foo memory handle is 64 bytes"):
        rebuild(*args)


def _reduce(t):
    from torch_foo.foo._ipc import reduce_foo_tensor

    return reduce_foo_tensor(t)


@pytest.mark.parametrize("what", ["untyped storage", "typed storage"])
def test_pickling_a_foo_storage_raises_as_for_cuda(what):
    t = torch.arange(4.0, device="foo")
    obj = t.untyped_storage() if what == "untyped storage" else t.storage()
    with pytest.raises(RuntimeError, match="Cannot pickle foo storage; try pickling a foo tensor instead"):
        ForkingPickler.dumps(obj)


@pytest.mark.slow
def test_cpu_tensors_still_share_through_shared_memory():
    tensors = CTX.Queue()
    p, results = _start(_describe, tensors)
    tensors.put(torch.arange(3.0))
    got = _answer(p, results)
    _finish(p, results)
    assert got["device"] == "cpu" and got["values"] == [0.0, 1.0, 2.0]


@pytest.mark.slow
def test_an_interprocess_event_orders_another_processs_stream():
    event = torch.foo.Event(interprocess=True)
    gate = torch.foo._gate()
    event.record()
    go_on = CTX.Event()
    p, results = _start(_wait_for_event, event, go_on)  # the event travels as its handle
    try:
        assert _answer(p, results) is False  # not complete: the gate holds it
        assert _answer(p, results) is False  # the child's stream waits for it
        assert not event.query()
    finally:
        gate.open()
        go_on.set()
    assert _answer(p, results) is True
    _finish(p, results)
    assert event.query()


def test_an_event_handle_opens_only_in_another_process():
    event = torch.foo.Event(interprocess=True)
    handle = event.ipc_handle()
    assert isinstance(handle, bytes) and len(handle) == 64
    with pytest.raises(RuntimeError, match="made by this process"):
        torch.foo.Event.from_ipc_handle(0, handle)
    with pytest.raises(RuntimeError, match="not a foo_sim event handle"):
        torch.foo.Event.from_ipc_handle(0, bytes(64))


def test_interprocess_events_cannot_time_and_only_they_have_handles():
    with pytest.raises(RuntimeError, match="cannot measure time"):
        torch.foo.Event(enable_timing=True, interprocess=True)
    with pytest.raises(RuntimeError, match="interprocess=True"):
        torch.foo.Event().ipc_handle()
    with pytest.raises(RuntimeError, match="Only an Event"):
        ForkingPickler.dumps(torch.foo.Event())
