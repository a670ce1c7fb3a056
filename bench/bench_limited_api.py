"""The Limited API build against the default build (docs/limited-api.md):
import time of torch_foo and the per-call cost of the bindings that moved
to dispatcher operators, each interpreter in its own processes, rounds
interleaved, with the median and the spread (min to max) over rounds.

Usage: python bench/bench_limited_api.py --default PYTHON --limited PYTHON [--rounds N]
  where each PYTHON is an interpreter whose environment has that build of
  torch_foo installed (a virtual environment per build).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# Each call is timed in a loop of NUMBER calls, best of REPEAT loops, in
# microseconds per call.
_CALLS = r"""
import json, timeit, torch, torch_foo
from torch_foo import _C
NUMBER, REPEAT = 2000, 5
torch.foo.init()
s = torch.foo.Stream()
a, b = torch.foo.Event(enable_timing=True), torch.foo.Event(enable_timing=True)
a.record(); b.record(); b.synchronize()
x = torch.ones(4, device="foo")
calls = {
    "torch.foo.current_stream()": lambda: torch.foo.current_stream(),
    "torch.foo.set_stream(s)": lambda: torch.foo.set_stream(s),
    "Stream.priority": lambda: s.priority,
    "torch.foo.Event().record()": lambda: torch.foo.Event().record(),
    "Event.elapsed_time": lambda: a.elapsed_time(b),
    "torch.foo.synchronize()": lambda: torch.foo.synchronize(),
    "torch.foo.device_count()": lambda: torch.foo.device_count(),
    "torch.foo.host_memory_stats()": lambda: torch.foo.host_memory_stats(),
    "torch.foo.memory_stats() (torch's binding)": lambda: torch.foo.memory_stats(),
    "compiled-kernel launch, 3 arguments": None,
    "eager x.add_(1) (not moved: the scale of a launch)": lambda: x.add_(1),
}
# A launch of a do-nothing packed kernel, as inductor's wrapper code does it.
import ctypes
from torch_foo.compile import runtime
noop = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda args: None)
calls["compiled-kernel launch, 3 arguments"] = lambda: runtime.launch(noop, 0, (x, 3, 0.5))
out = {}
for name, fn in calls.items():
    fn()
    out[name] = min(timeit.repeat(fn, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e6
    torch.foo.synchronize()
# An allocation and its free while the allocator records Python stacks
# (torch's CapturedTraceback in the default build, frames read through the
# Limited API in the other).
alloc = lambda: torch.empty(256, device="foo")
for name, history in [("allocation, no memory history", False), ("allocation, memory history with Python stacks", True)]:
    if history:
        torch.foo.memory._record_memory_history("all", context="all", stacks="python")
    alloc()
    out[name] = min(timeit.repeat(alloc, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e6
    torch.foo.memory._record_memory_history(None)
print(json.dumps(out))
"""

_IMPORT = r"""
import time, torch
start = time.perf_counter()
import torch_foo
print((time.perf_counter() - start) * 1e3)
"""


def _child(python: str, code: str, extra_env: dict) -> str:
    env = dict(os.environ, FOO_SIM_DEVICE_COUNT="2", **extra_env)
    result = subprocess.run([python, "-P", "-c", code], capture_output=True, text=True, env=env,
                            cwd=os.path.dirname(os.path.abspath(__file__)), timeout=600)
    if result.returncode != 0:
        sys.exit(f"{python} failed:\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def _spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} to {max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--default", required=True, help="interpreter with the default (pybind11) build")
    parser.add_argument("--limited", required=True, help="interpreter with the Limited API build")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    builds = {"default": args.default, "limited": args.limited}

    imports = {b: [] for b in builds}
    calls = {b: [] for b in builds}
    for _ in range(args.rounds):
        for build, python in builds.items():
            imports[build].append(float(_child(python, _IMPORT, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})))
            calls[build].append(json.loads(_child(python, _CALLS, {})))

    print(f"{args.rounds} rounds, builds interleaved; median (min to max over rounds)\n")
    print("| measurement | default build | Limited API build | ratio |")
    print("|---|---|---|---|")
    d, lim = statistics.median(imports["default"]), statistics.median(imports["limited"])
    print(f"| import torch_foo after torch, ms | {_spread(imports['default'], '.1f')} | "
          f"{_spread(imports['limited'], '.1f')} | {lim / d:.2f}x |")
    for name in calls["default"][0]:
        dv = [r[name] for r in calls["default"]]
        lv = [r[name] for r in calls["limited"]]
        print(f"| {name}, us/call | {_spread(dv, '.2f')} | {_spread(lv, '.2f')} | "
              f"{statistics.median(lv) / statistics.median(dv):.1f}x |")


if __name__ == "__main__":
    main()
