"""Backend registration and autoload, and that neither initializes foo."""

import pytest

from conftest import run_python, run_python_json

THREADS = "len(__import__('os').listdir('/proc/self/task'))"


def test_import_torch_alone_autoloads_foo():
    out = run_python_json("""
        import json, torch
        print(json.dumps({
            "accelerator": str(torch.accelerator.current_accelerator()),
            "device": str(torch.device("foo:1")),
            "module": torch.foo.__name__,
            "count": torch.accelerator.device_count(),
            "available": torch.accelerator.is_available(),
            "initialized": torch.foo.is_initialized(),
        }))
    """)
    assert out == {"accelerator": "foo", "device": "foo:1", "module": "torch_foo.foo", "count": 2,
                   "available": True, "initialized": False}


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_autoload_can_be_disabled_and_import_enables_explicitly():
    out = run_python_json("""
        import json, torch
        before = hasattr(torch, "foo")
        try:
            torch.device("foo")
            parsed = True
        except RuntimeError:
            parsed = False
        import torch_foo
        print(json.dumps({"before": before, "parsed_before": parsed, "after": torch.foo.is_available(),
                          "accelerator": str(torch.accelerator.current_accelerator())}))
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out == {"before": False, "parsed_before": False, "after": True, "accelerator": "foo"}


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_importing_torch_foo_first_works():
    out = run_python_json("""
        import json, torch_foo, torch
        print(json.dumps([torch.foo.device_count(), str(torch.accelerator.current_accelerator())]))
    """)
    assert out == [2, "foo"]


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_registering_twice_is_harmless():
    run_python("""
        import torch, torch_foo
        torch_foo._autoload()
        torch_foo._backend.register()
        assert torch.foo.device_count() == 2
    """)


def test_importing_and_querying_start_no_runtime_thread():
    out = run_python_json(f"""
        import json, torch
        base = {THREADS}
        torch.foo.device_count(); torch.foo.is_available(); torch.accelerator.device_count()
        torch.foo.get_device_properties(1); torch.accelerator.current_accelerator()
        unchanged = {THREADS} == base and not torch.foo.is_initialized()
        torch.foo.init()
        started = {THREADS} - base
        print(json.dumps({{"unchanged": unchanged, "started": started,
                           "initialized": torch.foo.is_initialized()}}))
    """)
    executors = 4 * 2  # FOO_SIM_DEVICE_EXECUTORS x FOO_SIM_DEVICE_COUNT
    assert out == {"unchanged": True, "started": executors, "initialized": True}


@pytest.mark.slow  # a child process; the quick run keeps the others
def test_first_stream_initializes_once_from_many_threads():
    out = run_python_json(f"""
        import json, threading, torch
        base = {THREADS}
        streams = []
        def use():
            streams.append(torch.foo.current_stream())
        threads = [threading.Thread(target=use) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        # Joined threads can linger in /proc for a moment: let the count settle.
        import time
        deadline = time.monotonic() + 10
        while {THREADS} - base != 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps([len(streams), {THREADS} - base, torch.foo.is_initialized()]))
    """)
    assert out == [8, 8, True]
