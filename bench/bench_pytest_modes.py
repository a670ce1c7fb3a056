"""What pytest --foo and --foo-strict cost a real suite: examples/ci_demo's
tests (the one that races on purpose left out), run under pytest without
the plugin, with it loaded but not asked for, with --foo and with --foo
--foo-strict, each in a process of its own, the modes interleaved round
after round. Prints each mode's median and spread, as ratios to the run
without the plugin: the tests' own time (setup, call and teardown, from
pytest's --durations) and the whole run's wall time (with interpreter
start-up and torch's import).

Usage: python bench/bench_pytest_modes.py [ROUNDS]   (default 7)
"""

import os
import re
import statistics
import subprocess
import sys
import time

DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "ci_demo")
MODES = {
    "no plugin": ["-p", "no:torch_foo"],
    "loaded": [],
    "--foo": ["--foo"],
    "--foo-strict": ["--foo", "--foo-strict"],
}
RACY = "tests/test_tinytrain.py::test_scoring_on_a_side_stream"


def run_once(args: list[str], env: dict) -> tuple[float, float]:
    """(the tests' own seconds, the run's wall seconds)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args, "--deselect", RACY,
                          "--durations=0", "--durations-min=0"], cwd=DEMO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if not re.search(r"\b4 passed\b", out.stdout):
        raise RuntimeError(f"pytest {' '.join(args)} did not pass:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    phases = re.findall(r"^([0-9.]+)s (?:setup|call|teardown) ", out.stdout, re.M)
    return sum(float(x) for x in phases), wall


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FOO_SIM_"))}
    tests = {mode: [] for mode in MODES}
    wall = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode, args in MODES.items():
            t, w = run_once(args, env)
            tests[mode].append(t)
            wall[mode].append(w)
    print(f"examples/ci_demo, 4 tests, {rounds} interleaved rounds")
    print("| mode | tests' time (median, min-max) | ratio | whole run (median, min-max) | ratio |")
    print("|---|---|---|---|---|")
    base_t, base_w = statistics.median(tests["no plugin"]), statistics.median(wall["no plugin"])
    for mode in MODES:
        t, w = statistics.median(tests[mode]), statistics.median(wall[mode])
        print(f"| {mode} | {t:.2f} s ({min(tests[mode]):.2f}-{max(tests[mode]):.2f}) | {t / base_t:.2f}x "
              f"| {w:.1f} s ({min(wall[mode]):.1f}-{max(wall[mode]):.1f}) | {w / base_w:.2f}x |")


if __name__ == "__main__":
    main()
