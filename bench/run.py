"""Runs every benchmark and prints a Markdown table of foo/CPU ratios.

Each run measures every row at torch's default number of threads (how users
run; the targets apply there) and at one thread. With ``--runs N`` the whole
set runs N times, one run after the other, and the table gives, per row and
thread count, the median of the runs' ratios and their spread (lowest to
highest). The table's caption names the run: date, machine, commit, torch.

Usage:
    python bench/run.py [--runs N] [--threads N] [--json PATH] [--update-docs]
    python bench/run.py --from-json PATH [--update-docs]

``--update-docs`` writes the table between the ``<!-- bench:begin -->`` and
``<!-- bench:end -->`` markers of README.md and docs/benchmarks.md, so the
published figures always come from a run of this command. ``--from-json PATH``
makes the table of runs saved with ``--json PATH`` (their caption unchanged)
instead of running.
"""

import argparse
import datetime
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

SUITES = ["bench_memory", "bench_compute", "bench_latency", "bench_training", "bench_graphs", "bench_compile",
          "bench_observability"]
DOCS = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "benchmarks.md")]
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def run_suites(threads: int) -> list[dict]:
    torch.set_num_threads(threads)
    rows = []
    for name in SUITES:
        rows.extend(importlib.import_module(name).run())
    return rows


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores, {model}"


def commit() -> str:
    try:
        sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def duration(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-4 else f"{seconds * 1e3:.3f} ms"


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}x" if len(values) > 1 else "–"


def table(runs: list[dict[int, list[dict]]], passes: list[int], meta: dict) -> str:
    """runs[k][threads] is run k's rows at that thread count; rows pair up by
    position across runs and thread counts (names may carry measured figures)."""
    n = len(runs)
    cols = []
    for t in passes:
        label = f"{t} thread{'s' if t > 1 else ''}"
        cols += [f"foo/CPU, {label}", f"{n} runs" if n > 1 else "spread"]
    lines = [
        f"Run of {meta['date']} on {meta['machine']}, commit {meta['commit']}, torch {meta['torch']}: "
        f"{n} run{'s' if n > 1 else ''} of `python bench/run.py`; each ratio is the median of "
        f"interleaved rounds, the table gives the median over the runs and their spread. "
        f"foo and CPU times are the first run's, at {passes[0]} thread{'s' if passes[0] > 1 else ''}.",
        "",
        "| benchmark | foo | CPU | " + " | ".join(cols) + " | target |",
        "|---|---|---|" + "---|" * len(cols) + "---|",
    ]
    first = runs[0][passes[0]]
    for i, r in enumerate(first):
        cells = []
        for t in passes:
            ratios = [run[t][i]["ratio"] for run in runs]
            cells += [f"{statistics.median(ratios):.2f}x", spread(ratios)]
        lines.append(f"| {r['benchmark']} | {duration(r['foo'])} | {duration(r['cpu'])} | "
                     + " | ".join(cells) + f" | {r['target']} |")
    return "\n".join(lines) + "\n"


def update_docs(text: str) -> None:
    for path in DOCS:
        with open(path) as f:
            content = f.read()
        if BEGIN not in content or END not in content:
            raise SystemExit(f"{path} has no {BEGIN} ... {END} section to update")
        head, rest = content.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(path, "w") as f:
            f.write(f"{head}{BEGIN}\n{text}{END}{tail}")
        print(f"updated {os.path.relpath(path, ROOT)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="one pass per run, at N threads for both sides")
    parser.add_argument("--runs", type=int, default=1, help="how many runs of the whole set (default 1)")
    parser.add_argument("--json", default=None, help="also write every run's rows to this file")
    parser.add_argument("--update-docs", action="store_true", help="write the table into README.md and docs/")
    parser.add_argument("--from-json", default=None, help="no new run: the table of runs saved with --json")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        passes = saved["passes"]
        runs = [{t: run[str(t)] for t in passes} for run in saved["runs"]]
        text = table(runs, passes, saved["meta"])
        print(text)
        if args.update_docs:
            update_docs(text)
        return
    passes = [args.threads] if args.threads else [torch.get_num_threads(), 1]
    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "commit": commit(),
            "torch": torch.__version__}
    runs = []
    for k in range(args.runs):
        runs.append({t: run_suites(t) for t in passes})
        print(f"run {k + 1} of {args.runs} done", file=sys.stderr)
    text = table(runs, passes, meta)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "passes": passes, "runs": [{str(t): rows for t, rows in run.items()}
                                                                for run in runs]}, f, indent=1)
    if args.update_docs:
        update_docs(text)


if __name__ == "__main__":
    main()
