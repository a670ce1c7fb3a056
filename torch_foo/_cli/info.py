"""``python -m torch_foo``: versions, the simulated machine, its configuration
and where each value came from, and a self-check that trains a small model
on every device, on two streams at once, against the same step on CPU."""

import os
import sys
import threading
import time
from importlib import metadata

import torch

# The foo_sim variables and their defaults (README, "Configuration"); the
# runtime reports the device values it uses, so these only label the source.
FOO_SIM_VARIABLES = {
    "FOO_SIM_DEVICE_COUNT": "2",
    "FOO_SIM_DEVICE_MEMORY": "8GiB",
    "FOO_SIM_DEVICE_EXECUTORS": "4",
    "FOO_SIM_LAUNCH_BLOCKING": "0",
    "FOO_SIM_LAUNCH_DELAY_US": "0",
    "FOO_SIM_COPY_THREADS": str(os.cpu_count() or 1),  # foo_sim's default: the hardware threads
    "FOO_SIM_RACE_CHECK": "0",
    "FOO_SIM_FAULTS": "none",  # read by torch_foo's runtime (torch_foo.testing.inject_faults)
}


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def _configuration_lines() -> list[str]:
    lines = []
    for name, default in FOO_SIM_VARIABLES.items():
        if name in os.environ:
            lines.append(f"  {name:<26}{os.environ[name]!s:<10}from the environment")
        else:
            lines.append(f"  {name:<26}{default:<10}default")
    for name in sorted(os.environ):
        if name.startswith("FOO_SIM_") and name not in FOO_SIM_VARIABLES:
            lines.append(f"  {name:<26}{os.environ[name]!s:<10}IGNORED: foo_sim reads no such variable")
    for name in ("FOO_WARN_FALLBACK", "PYTORCH_ALLOC_CONF"):
        if name in os.environ:
            lines.append(f"  {name:<26}{os.environ[name]!s:<10}from the environment")
    return lines


def _training_step(device: str, model_cpu: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    """One SGD step of a copy of ``model_cpu`` on ``device``: the loss and the updated weights, left on
    ``device`` (queued, not waited for, on a foo stream)."""
    import copy

    model = copy.deepcopy(model_cpu).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
    return loss.detach(), [p.detach() for p in model.parameters()]


def _self_check(device: int, results: list) -> None:
    """Two training steps on two streams of ``device`` at once, each compared with CPU."""
    torch.manual_seed(device)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    batches = [(torch.randn(16, 32), torch.randint(0, 8, (16,))) for _ in range(2)]
    expected = [_training_step("cpu", model, x, y) for x, y in batches]
    streams = [torch.foo.Stream(device=device) for _ in batches]
    events = [(torch.foo.Event(enable_timing=True), torch.foo.Event(enable_timing=True)) for _ in batches]
    outputs = [None, None]
    start = time.perf_counter()
    with torch.foo.device(device):
        for i, ((x, y), stream) in enumerate(zip(batches, streams)):
            with torch.foo.stream(stream):
                events[i][0].record()
                outputs[i] = _training_step(f"foo:{device}", model, x, y)
                events[i][1].record()
        for stream in streams:
            stream.synchronize()
    wall = time.perf_counter() - start
    outputs = [(loss.cpu(), [w.cpu() for w in weights]) for loss, weights in outputs]
    for i, ((loss, weights), (want_loss, want_weights)) in enumerate(zip(outputs, expected)):
        ok = torch.allclose(loss, want_loss, rtol=1e-4, atol=1e-5) and all(
            torch.allclose(w, v, rtol=1e-4, atol=1e-5) for w, v in zip(weights, want_weights))
        detail = "" if ok else f" (loss {loss.item():.6f}, CPU {want_loss.item():.6f})"
        timing = f"{events[i][0].elapsed_time(events[i][1]):7.1f} ms on the stream, {wall * 1000:7.1f} ms for the device"
        results.append((f"foo:{device} stream {i + 1}", ok, timing, detail))


def _run_self_check(time_limit: float) -> tuple[list, bool]:
    """Runs the checks on a thread, so that a hang is reported instead of waited for."""
    results: list = []
    errors: list = []

    def run():
        try:
            for d in range(torch.foo.device_count()):
                _self_check(d, results)
        except Exception as e:  # reported as a failure, with what went wrong
            errors.append(f"{type(e).__name__}: {e}")

    worker = threading.Thread(target=run, daemon=True, name="torch_foo self-check")
    worker.start()
    worker.join(time_limit)
    if worker.is_alive():
        errors.append(f"did not finish within {time_limit:.0f} s")
    for e in errors:
        results.append(("error", False, "", e))
    return results, worker.is_alive()


def report(time_limit: float = 10.0) -> int:
    import torch_foo

    print(f"torch_foo {_version('torch_foo')}  ({os.path.dirname(torch_foo.__file__)})")
    print(f"torch     {torch.__version__}  ({os.path.dirname(torch.__file__)})")
    print(f"python    {sys.version.split()[0]}")
    print()
    print("Configuration (read once, at the first use of a device):")
    for line in _configuration_lines():
        print(line)
    print()
    count = torch.foo.device_count()
    if count == 0:
        reason = torch_foo._C._no_device_reason()
        print(f"Simulated machine: no foo device{': ' + reason if reason else ''}")
        print("\nSelf-check: FAIL (no device)")
        return 1
    print(f"Simulated machine: {count} foo device{'s' if count > 1 else ''}")
    try:
        for d in range(count):
            p = torch.foo.get_device_properties(d)
            free, total = torch.foo.mem_get_info(d)
            print(f"  foo:{d}  {p.name}, {_gib(total)} ({_gib(free)} free), {p.executor_count} executor threads")
    except Exception as e:
        print(f"  the runtime does not start: {type(e).__name__}: {e}")
        print("\nSelf-check: FAIL")
        return 1
    print()
    print("Self-check (one SGD step of a small MLP per stream, two streams per device at once, against CPU):")
    start = time.perf_counter()
    results, hung = _run_self_check(time_limit)
    for name, ok, timing, detail in results:
        print(f"  {name:<18}{'PASS' if ok else 'FAIL'}  {timing}{(' ' + detail) if detail else ''}")
    passed = bool(results) and all(ok for _, ok, _, _ in results)
    print(f"\nSelf-check: {'PASS' if passed else 'FAIL'} ({len(results)} checks in {time.perf_counter() - start:.2f} s)")
    if hung:
        sys.stdout.flush()
        os._exit(1)  # a hung kernel would keep the interpreter from exiting
    return 0 if passed else 1
