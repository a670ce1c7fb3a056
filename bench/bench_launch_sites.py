"""What recording launch sites (pytest --foo turns it on, so that a kernel
error found at a later synchronization names the line that launched it)
costs the host per launch: the host's time per small operator with the
recording off and on, each in a process of its own, interleaved round after
round. Two launch patterns: x.mul_ in a loop (the launching frame is the
user's) and an nn.ReLU module call (torch.nn's frames lie between the
user's line and the launch, and are walked past). Prints, for each, the
medians and spreads, and the per-round difference on minus off.

Usage: python bench/bench_launch_sites.py [ROUNDS]   (default 7)
"""

import os
import statistics
import subprocess
import sys

CHILD = """
import statistics, sys, time
sys.path.insert(0, {bench!r})
import torch
from bench_launch import OPS, host_alone_us
from torch_foo import _C

_C._set_record_launch_sites({on})
x = torch.ones(1000, device="foo")
relu = torch.nn.ReLU(inplace=True)


def module_calls_us(rounds=9):
    times = []
    for _ in range(rounds + 1):  # the first round warms up
        torch.foo.synchronize()
        torch.foo._sleep(OPS * 10 / 1000)  # the executor waits: the host's time alone
        start = time.perf_counter()
        for _ in range(OPS):
            relu(x)
        times.append((time.perf_counter() - start) / OPS * 1e6)
    torch.foo.synchronize()
    return statistics.median(times[1:])


host_alone_us(x)
print(host_alone_us(x, rounds=9), module_calls_us())
"""
PATTERNS = ("x.mul_ loop", "nn.ReLU module call")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    bench = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    times = {on: [[] for _ in PATTERNS] for on in (False, True)}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for on in (False, True):
            out = subprocess.run([sys.executable, "-P", "-c", CHILD.format(bench=bench, on=on)], env=env, cwd="/",
                                 capture_output=True, text=True, check=True)
            for i, value in enumerate(out.stdout.split()[-len(PATTERNS):]):
                times[on][i].append(float(value))
    print(f"{rounds} interleaved rounds; the machine's 1-minute load average at their starts: "
          f"{min(loads):.1f}-{max(loads):.1f}")
    print("host us per launch: median (min-max)")
    for i, pattern in enumerate(PATTERNS):
        off, on = times[False][i], times[True][i]
        diff = [b - a for a, b in zip(off, on)]
        print(f"  {pattern:20} off {statistics.median(off):6.2f} ({min(off):.2f}-{max(off):.2f})   "
              f"on {statistics.median(on):6.2f} ({min(on):.2f}-{max(on):.2f})   "
              f"on - off {statistics.median(diff):+.2f} ({min(diff):+.2f} to {max(diff):+.2f})")


if __name__ == "__main__":
    main()
