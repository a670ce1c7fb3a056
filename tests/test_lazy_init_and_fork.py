"""Lazy initialization, fork safety, and configurations without devices."""

import pytest

from conftest import run_python, run_python_json

FORK_CHILD = """
import json, multiprocessing as mp, torch

def child(queue, what):
    try:
        if what == "init":
            torch.foo.init()
        elif what == "stream":
            torch.foo.current_stream()
        elif what == "synchronize":
            torch.foo.synchronize()
        elif what == "torch.Stream":
            torch.Stream("foo")
        elif what == "seeding":
            # As torch.cuda's (a DataLoader worker's worker_init_fn): ignored.
            torch.foo.manual_seed(1)
            torch.foo.seed()
            torch.foo.manual_seed_all(1)
        queue.put("no error")
    except RuntimeError as e:
        queue.put(str(e))

def run_child(what):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=child, args=(queue, what))
    p.start()
    p.join(60)
    return queue.get(timeout=5) if p.exitcode == 0 else f"exit {p.exitcode}"
"""


@pytest.mark.parametrize("what", ["init", "stream", "synchronize", "torch.Stream"])
def test_child_forked_after_init_gets_a_clear_error_and_parent_keeps_working(what):
    out = run_python_json(FORK_CHILD + f"""
torch.foo.init()
message = run_child({what!r})
s = torch.foo.Stream()
torch.foo._sleep(1)
s.synchronize()
torch.foo.synchronize()
print(json.dumps([message, torch.foo.is_initialized()]))
""")
    message, parent_ok = out
    # CUDA's words, with foo's name where CUDA says CUDA.
    assert message == ("Cannot re-initialize foo in forked subprocess. To use foo with multiprocessing, "
                       "you must use the 'spawn' start method")
    assert parent_ok


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_seeding_in_a_child_forked_after_init_is_ignored_as_on_cuda():
    out = run_python_json(FORK_CHILD + """
torch.foo.init()
print(json.dumps(run_child("seeding")))
""")
    assert out == "no error"


def test_child_forked_before_init_can_use_foo():
    out = run_python_json(FORK_CHILD + """
torch.foo.device_count(); torch.foo.is_available()   # fork-safe queries
message = run_child("stream")
print(json.dumps([message, torch.foo.is_initialized()]))
""")
    assert out == ["no error", False]


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_no_devices():
    out = run_python_json("""
        import json, torch
        try:
            torch.foo.init()
            error = None
        except RuntimeError as e:
            error = str(e)
        torch.foo.manual_seed(0)   # ignored without a device, as by torch.cuda
        torch.foo.seed()
        print(json.dumps([torch.foo.is_available(), torch.foo.device_count(),
                          torch.accelerator.is_available(), error]))
    """, env={"FOO_SIM_DEVICE_COUNT": "0"})
    assert out[:3] == [False, 0, False]
    assert "Found no foo devices" in out[3]


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_malformed_device_count_is_reported_by_name():
    out = run_python_json("""
        import json, torch
        try:
            torch.foo.current_stream()
            error = None
        except RuntimeError as e:
            error = str(e)
        print(json.dumps([torch.foo.device_count(), error]))
    """, env={"FOO_SIM_DEVICE_COUNT": "lots"})
    assert out[0] == 0
    assert "FOO_SIM_DEVICE_COUNT='lots'" in out[1]


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_spawned_workers_use_foo(tmp_path):
    out = run_python("""
        import multiprocessing as mp, torch

        def work(_):
            s = torch.foo.Stream(1)
            torch.foo._sleep(1)
            s.synchronize()
            return torch.foo.device_count()

        if __name__ == "__main__":
            torch.foo.init()
            with mp.get_context("spawn").Pool(2) as pool:
                print(pool.map(work, range(2)))
    """, script=str(tmp_path / "spawn_main.py"))
    assert out.strip() == "[2, 2]"
