"""At interpreter exit, lets torch's autograd device threads finish with the
last backward pass before Python finalizes.

torch's backward (``torch.autograd.graph._engine_run_backward``) stashes a
Python object (the caller's ``contextvars`` context) in the thread-local
state that each graph task keeps. The device thread that finishes a graph
task wakes the waiting thread first and drops its own reference after; when
that reference is the last, the thread takes the GIL to release the object.
If the main thread has meanwhile returned from ``backward()`` and the
interpreter is finalizing, taking the GIL ends the device thread inside C++
code and the process aborts ("terminate called without an active
exception"). The device threads serve CUDA devices the same way; on foo's
two cores, the executors running beside them make the late release likely.

At exit, a backward pass through each device thread that was started, run
without the stash, closes that window: a device thread takes a new task only
after it let go of the previous graph task (which gets the GIL while the
exiting thread waits in the engine without it), and the new graph task holds
no Python object.
"""

import atexit
import os

import torch

_PREFIX = "pt_autograd_"


def _started_device_threads() -> list[int]:
    """Device indices whose autograd threads exist in this process."""
    indices = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith(_PREFIX) and name[len(_PREFIX):].isdigit():
            indices.add(int(name[len(_PREFIX):]))
    return sorted(indices)


def _pass_through(device: int) -> None:
    x = torch.zeros((), device=f"foo:{device}", requires_grad=True)
    y = x * 2  # its backward node runs on the device thread of foo:device
    torch.autograd.graph.Variable._execution_engine.run_backward(
        (y,), (torch.ones((), device=f"foo:{device}"),), False, False, (), True, True)


def _finish_device_threads() -> None:
    from torch_foo import foo

    if not foo.is_initialized():
        return
    for device in _started_device_threads():
        if device >= foo.device_count():
            continue
        try:
            _pass_through(device)
        except Exception:  # noqa: BLE001 - exiting: a failure here must not hide the program's own
            pass


def install() -> None:
    """Registers the exit hook; idempotent (atexit keeps one per call)."""
    global _installed
    if not _installed:
        atexit.register(_finish_device_threads)
        _installed = True


_installed = False
