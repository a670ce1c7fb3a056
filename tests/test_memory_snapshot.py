"""Memory history and snapshots: torch.foo.memory._record_memory_history,
_snapshot and _dump_snapshot produce torch.cuda.memory's format, which
PyTorch's own renderer (torch.cuda._memory_viz) turns into its pages."""

import base64
import gc
import inspect
import json
import os
import pickle
import subprocess
import sys

import pytest
import torch
import torch.cuda._memory_viz as memory_viz

from conftest import held_stream, run_python


@pytest.fixture
def history(foo):
    """Recording on with Python stacks; off (and the trace dropped) afterwards."""
    foo.memory._record_memory_history("all", context="all", stacks="python")
    yield foo.memory
    foo.synchronize()
    foo.memory._record_memory_history(None)


def _training_step(device):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(32, 64, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return model, opt, loss


@pytest.fixture
def no_gc():
    """No garbage collection while the test compares a snapshot with the
    statistics: it would free earlier tests' cyclic garbage in between."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def _segments_of(snapshot, device):
    return [s for s in snapshot["segments"] if s["device"] == device]


def test_snapshot_after_training_step_matches_memory_stats(history, foo, no_gc):
    kept = [_training_step(f"foo:{d}") for d in range(foo.device_count())]
    foo.synchronize()
    snapshot = history._snapshot()
    assert len(snapshot["device_traces"]) == foo.device_count()
    for d in range(foo.device_count()):
        stats = foo.memory_stats(d)
        segments = _segments_of(snapshot, d)
        assert segments, f"no segments on foo:{d}"
        assert sum(s["total_size"] for s in segments) == stats["reserved_bytes.all.current"]
        blocks = [b for s in segments for b in s["blocks"]]
        allocated = [b for b in blocks if b["state"] == "active_allocated"]
        assert sum(b["size"] for b in allocated) == stats["allocated_bytes.all.current"]
        assert sum(b["requested_size"] for b in allocated) == stats["requested_bytes.all.current"]
        assert len(allocated) == stats["allocation.all.current"]
        assert sum(s["allocated_size"] for s in segments) == stats["allocated_bytes.all.current"]
        for s in segments:
            # Blocks tile their segment, in address order.
            assert sum(b["size"] for b in s["blocks"]) == s["total_size"]
            addresses = [b["address"] for b in s["blocks"]]
            assert addresses[0] == s["address"]
            assert all(a + b["size"] == n for a, b, n in zip(addresses, s["blocks"], addresses[1:]))
            assert s["segment_type"] in ("small", "large")
        # Every live tensor of the step is an allocated block of this device.
        model, opt, loss = kept[d]
        starts = {b["address"] for b in allocated}
        for t in [*model.parameters(), *(p.grad for p in model.parameters()), loss]:
            assert t.untyped_storage().data_ptr() in starts
        # (segment_alloc too, unless earlier tests in this process left
        # enough cached memory: test_oom_while_recording checks it afresh.)
        actions = {e["action"] for e in snapshot["device_traces"][d]}
        assert {"alloc", "free_requested", "free_completed"} <= actions


def test_frames_point_at_the_allocating_line(history, foo):
    line = inspect.currentframe().f_lineno + 1
    t = torch.empty(1000, device="foo")
    snapshot = history._snapshot()
    block = next(b for s in snapshot["segments"] for b in s["blocks"]
                 if b["address"] == t.data_ptr() and b["state"] == "active_allocated")
    assert {"filename": __file__, "line": line, "name": "test_frames_point_at_the_allocating_line"} in block["frames"]
    alloc = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc" and e["addr"] == t.data_ptr()]
    assert any(f["filename"] == __file__ and f["line"] == line for f in alloc[-1]["frames"])
    address = t.data_ptr()
    del_line = inspect.currentframe().f_lineno + 1
    del t
    frees = [e for e in history._snapshot()["device_traces"][0]
             if e["action"] == "free_requested" and e["addr"] == address]
    # context="all": the free carries the stack that freed it.
    assert any(f["filename"] == __file__ and f["line"] == del_line for f in frees[-1]["frames"])


def test_renders_with_pytorchs_memory_viz(history, foo, tmp_path):
    kept = _training_step("foo")
    foo.synchronize()
    after = history._snapshot()

    for html in (memory_viz.trace_plot(after), memory_viz.segment_plot(after)):
        assert html.startswith("\n<!DOCTYPE html>") or "<html>" in html
        payload = json.loads(html.split("const local_files = ", 1)[1].split("\n", 1)[0])
        embedded = pickle.loads(base64.b64decode(payload[0]["base64"]))
        assert embedded["device_traces"][0] == after["device_traces"][0]

    lines = memory_viz.segments(after, format_flamegraph=lambda text: text)
    assert f"seg_{after['segments'][0]['address']}" in lines
    assert "active_allocated" in lines
    assert memory_viz.memory(after, format_flamegraph=lambda text: text).strip()
    # compare() takes segment lists (torch.cuda.memory_snapshot()'s form);
    # "before" lacks the first segment, so compare() reports it as new.
    first = after["segments"][0]
    diff = memory_viz.compare(after["segments"][1:], after["segments"], format_flamegraph=lambda text: text)
    assert f"only_after;stream_{first['stream']};seg_{first['address']}" in diff
    assert "segments:" in memory_viz.segsum(after)
    trace_text = memory_viz.trace(after)
    assert "Device 0" in trace_text and "del " in trace_text  # allocations and frees, in Python form

    path = tmp_path / "snap.pickle"
    history._dump_snapshot(str(path))
    with open(path, "rb") as f:
        assert len(pickle.load(f)["segments"]) >= len(after["segments"])
    out = tmp_path / "out.html"
    subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", "trace_plot", str(path), "-o", str(out)],
                   check=True, timeout=120, env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert "add_local_files" in out.read_text()
    del kept


def test_stream_ordered_free_is_requested_then_completed(history, foo):
    side = foo.Stream()
    t = torch.ones(4096, device="foo")
    address = t.data_ptr()
    side.wait_stream(foo.current_stream())
    with held_stream(side) as still_held:  # the side stream is held while the host frees t
        with foo.stream(side):
            t.mul_(2)
        t.record_stream(side)
        del t
        trace = history._snapshot()["device_traces"][0]
        mine = [e["action"] for e in trace if e.get("addr") == address and e["action"].startswith("free")]
        assert mine[-1] == "free_requested", "the block must wait for the side stream"
        pending = [b for s in history._snapshot()["segments"] for b in s["blocks"] if b["address"] == address]
        assert pending[0]["state"] == "active_pending_free"
        assert still_held()
    side.synchronize()
    trace = history._snapshot()["device_traces"][0]
    mine = [e["action"] for e in trace if e.get("addr") == address and e["action"].startswith("free")]
    assert mine[-2:] == ["free_requested", "free_completed"]


def test_state_only_keeps_frames_without_a_trace(foo):
    foo.memory._record_memory_history("state", context="state", stacks="python")
    try:
        t = torch.empty(100, device="foo")
        snapshot = foo.memory._snapshot()
    finally:
        foo.memory._record_memory_history(None)
    assert snapshot["device_traces"][0] == []
    block = next(b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == t.data_ptr())
    assert any(f["filename"] == __file__ for f in block["frames"])


def test_off_records_nothing_and_max_entries_keeps_the_newest(foo):
    foo.memory._record_memory_history(None)
    t = torch.empty(100, device="foo")
    u = torch.empty(100, device="foo")
    del t
    snapshot = foo.memory._snapshot()
    assert all(trace == [] for trace in snapshot["device_traces"])
    (block,) = [b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == u.data_ptr()]
    assert block["state"] == "active_allocated" and block["frames"] == []
    del u

    foo.memory._record_memory_history("all", max_entries=4)
    try:
        sizes = [512 * (i + 1) for i in range(6)]
        for n in sizes:
            torch.empty(n, dtype=torch.uint8, device="foo")  # alloc, free_requested, free_completed
        trace = foo.memory._snapshot()["device_traces"][0]
    finally:
        foo.memory._record_memory_history(None)
    assert len(trace) == 4
    assert [e["action"] for e in trace] == ["free_completed", "alloc", "free_requested", "free_completed"]
    assert trace[1]["size"] == sizes[-1]
    assert trace[0]["time_us"] <= trace[-1]["time_us"]


def test_a_larger_max_entries_keeps_the_trace_in_order(foo):
    foo.memory._record_memory_history("all", max_entries=4)
    try:
        for n in (512, 1024, 1536):  # 9 entries: the ring of 4 has wrapped
            torch.empty(n, dtype=torch.uint8, device="foo")
        foo.memory._record_memory_history("all", max_entries=100)
        for n in (2048, 2560):
            torch.empty(n, dtype=torch.uint8, device="foo")
        trace = foo.memory._snapshot()["device_traces"][0]
    finally:
        foo.memory._record_memory_history(None)
    times = [e["time_us"] for e in trace]
    assert times == sorted(times)
    assert [e["size"] for e in trace if e["action"] == "alloc"][-2:] == [2048, 2560]


def test_alloc_context_puts_stacks_in_the_trace_state_does_not(foo):
    for context, traced in (("alloc", True), ("state", False)):
        foo.memory._record_memory_history("all", context=context, stacks="python")
        try:
            t = torch.empty(100, device="foo")
            snapshot = foo.memory._snapshot()
        finally:
            foo.memory._record_memory_history(None)
        (alloc,) = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc" and e["addr"] == t.data_ptr()]
        assert bool(alloc["frames"]) == traced, context
        block = next(b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == t.data_ptr())
        assert any(f["filename"] == __file__ for f in block["frames"])  # the live block keeps its stack either way
        del t


def test_bad_arguments_are_python_errors(foo):
    with pytest.raises(ValueError):
        foo.memory._record_memory_history("sometimes")
    with pytest.raises(ValueError):
        foo.memory._record_memory_history("all", stacks="cpp")
    with pytest.raises(ValueError):
        foo.memory._record_memory_history("all", context="never")
    with pytest.raises(ValueError):
        foo.memory._record_memory_history("all", max_entries=0)
    with pytest.raises(TypeError):
        foo.memory._record_memory_history(True)
    with pytest.raises(TypeError):
        foo.memory._attach_out_of_memory_observer(42)


def test_oom_while_recording_is_traced_and_observed():
    out = run_python("""
        import json, sys, torch
        seen = []
        def observer(device, requested, total, free):
            # The allocator's lock is not held: a snapshot can be taken here.
            seen.append([device, requested, total, free, len(torch.foo.memory._snapshot()["segments"])])
        torch.foo.memory._attach_out_of_memory_observer(observer)
        unraisable = []
        sys.unraisablehook = lambda u: unraisable.append(str(u.exc_value))
        def failing_observer(*args):
            raise ValueError("observer failed")
        torch.foo.memory._attach_out_of_memory_observer(failing_observer)
        torch.foo.memory._record_memory_history("all", stacks="python")
        keep = torch.empty(40 << 20, dtype=torch.uint8, device="foo")
        try:
            torch.empty(100 << 20, dtype=torch.uint8, device="foo")
            raise SystemExit("no OOM")
        except torch.OutOfMemoryError:
            pass
        trace = torch.foo.memory._snapshot()["device_traces"][0]
        oom = [e for e in trace if e["action"] == "oom"]
        segment = [e["size"] for e in trace if e["action"] == "segment_alloc" and e["addr"] == keep.data_ptr()]
        after = torch.ones(1000, device="foo").sum().item()   # still usable
        print(json.dumps({"oom": oom[-1] if oom else None, "seen": seen, "after": after, "segment": segment, "unraisable": unraisable,
                          "summary": "Out-of-memory errors" in torch.foo.memory_summary(),
                          "num_ooms": torch.foo.memory_stats()["num_ooms"]}))
    """, env={"FOO_SIM_DEVICE_MEMORY": "64MiB"})
    result = json.loads(out.strip().splitlines()[-1])
    oom = result["oom"]
    assert oom is not None
    assert oom["size"] == 100 << 20
    assert "addr" not in oom and 0 < oom["device_free"] < 64 << 20
    assert any(f["line"] > 0 and "<string>" in f["filename"] for f in oom["frames"])
    assert result["seen"] and result["seen"][0][:3] == [0, 100 << 20, 64 << 20]
    assert result["seen"][0][4] >= 1
    assert result["after"] == 1000.0
    assert result["num_ooms"] == 1
    assert result["unraisable"] == ["observer failed"]  # reported, and the caller still got the OOM
    assert result["segment"] == [40 << 20]  # keep's own segment, recorded when it was allocated


def test_stacks_all_adds_cpp_frames(foo):
    foo.memory._record_memory_history("all", context="alloc", stacks="all")
    try:
        t = torch.empty(100, device="foo")
        trace = foo.memory._snapshot()["device_traces"][0]
    finally:
        foo.memory._record_memory_history(None)
    (alloc,) = [e for e in trace if e["action"] == "alloc" and e["addr"] == t.data_ptr()]
    names = [f["name"] for f in alloc["frames"]]
    assert any("::" in n for n in names), "C++ frames (Python function names have no ::)"
    assert any(f["filename"] == __file__ for f in alloc["frames"]), "and Python frames"


def test_default_stream_is_stream_0_as_in_cuda_snapshots(history, foo):
    # PyTorch's memory viewer takes stream 0 as the default stream (CUDA's
    # null stream) and labels no stream when every block is on it.
    side = foo.Stream()
    on_default = torch.empty(1000, device="foo")
    with foo.stream(side):
        on_side = torch.empty(3 << 20, dtype=torch.uint8, device="foo")
    snapshot = history._snapshot()
    stream_of = {b["address"]: s["stream"] for s in snapshot["segments"] for b in s["blocks"]}
    assert stream_of[on_default.data_ptr()] == 0
    assert stream_of[on_side.data_ptr()] == side.foo_stream != 0
    allocs = {e["addr"]: e["stream"] for e in snapshot["device_traces"][0] if e["action"] == "alloc"}
    assert allocs[on_default.data_ptr()] == 0 and allocs[on_side.data_ptr()] == side.foo_stream
