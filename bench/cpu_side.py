"""The CPU side of the benchmarks, timed in a process of its own.

A process that runs foo kernels can hold more OpenMP threads than the
machine has cores: every executor thread that runs a parallel kernel is
the master of a team of its own, beside the main thread's team (until it
gives it back, 100 ms after its last kernel). libgomp then makes all of
that process's OpenMP threads sleep after about 100 spins between parallel
regions, where a process with one team spins for about 3 ms, and waking
them costs a futex call and often a shared core. Measured on this machine
before executors gave their teams back: the MLP training step on CPU took
3.2 ms in a fresh process and 5.1 ms in the same process after one foo
matmul. CPU PyTorch, as users run it, has no foo in its process; so the
CPU column comes from a child process that does not load torch_foo, timed
in rounds interleaved with the foo side's, as before.

A workload is named by module and factory: `factory(device)` builds the
tensors or model on `device` and returns the function to time; the parent
builds the foo side with the same factory.
"""

import atexit
import json
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


class CpuSide:
    """A child Python process that builds and times CPU workloads on request."""

    def __init__(self) -> None:
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        self._proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], cwd=HERE, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._next_id = 0

    def request(self, **command) -> dict:
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the CPU benchmark process exited (code {self._proc.wait()}); its stderr says why")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the CPU benchmark process failed on {command}:\n{reply['error']}")
        return reply

    def workload(self, module: str, factory: str) -> "CpuWorkload":
        self._next_id += 1
        self.request(op="build", id=self._next_id, module=module, factory=factory, threads=_threads())
        return CpuWorkload(self, self._next_id)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=60)


class CpuWorkload:
    """A workload built in the CPU process; `seconds(repeat)` times it there."""

    def __init__(self, side: CpuSide, ident: int) -> None:
        self._side, self._id = side, ident

    def __call__(self) -> None:
        self.seconds(1)

    def seconds(self, repeat: int) -> float:
        return self._side.request(op="time", id=self._id, repeat=repeat, threads=_threads())["seconds"]

    def __del__(self) -> None:
        try:
            self._side.request(op="drop", id=self._id)
        except Exception:
            pass  # the process is gone at exit; nothing is left to free


_side = None


def cpu_workload(module: str, factory: str) -> CpuWorkload:
    """`module.factory("cpu")` built and timed in the CPU process."""
    global _side
    if _side is None:
        _side = CpuSide()
        atexit.register(_side.close)
    return _side.workload(module, factory)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _serve() -> None:
    # Replies go to the real stdout; anything else the workloads print
    # (compiler warnings, for one) goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, HERE)
    import importlib

    import torch

    from common import seconds

    workloads = {}
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if "threads" in command and torch.get_num_threads() != command["threads"]:
                torch.set_num_threads(command["threads"])
            if command["op"] == "build":
                fn = getattr(importlib.import_module(command["module"]), command["factory"])("cpu")
                fn()  # warm-up: caches, the allocator, a compilation
                workloads[command["id"]] = fn
                reply = {}
            elif command["op"] == "time":
                reply = {"seconds": seconds(workloads[command["id"]], command["repeat"])}
            elif command["op"] == "drop":
                workloads.pop(command["id"], None)
                reply = {}
            else:
                raise ValueError(f"unknown command {command['op']!r}")
        except Exception:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve()
