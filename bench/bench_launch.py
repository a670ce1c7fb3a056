"""Where the host's time goes when it launches small operators on foo, and
how the small-op chain scales with host threads. Prints its own tables
(docs/internals/launch-cost.md explains how to read them).

Usage: python bench/bench_launch.py
"""

import statistics
import threading
import time

import torch

OPS = 10_000


def per_op_us(fn, rounds: int = 7) -> float:
    """Median over rounds of fn()'s time divided by OPS, in microseconds."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) / OPS * 1e6)
    return statistics.median(times)


def chain_on(x: torch.Tensor):
    def run() -> None:
        for _ in range(OPS):
            x.mul_(1.0001)
    return run


def meta_device_cpp_us() -> float | None:
    """Python, dispatch and the operator's C++ meta function, on the meta
    device. torch registers Python meta kernels for many operators (mul_
    among them: torch/_meta_registrations.py), which would make the meta
    device cost a Python call more than any real device's dispatch; they
    are unregistered here, for the rest of this process (the measurements
    after this one do not use the meta device). None if this torch keeps
    them elsewhere."""
    import torch._meta_registrations as registrations

    lib = getattr(registrations, "_meta_lib_dont_use_me_use_register_meta", None)
    if lib is None:
        return None
    lib._destroy()
    return per_op_us(chain_on(torch.ones(1000, device="meta")))


def host_alone_us(x: torch.Tensor, rounds: int = 7) -> float:
    """The host's time per launch of the chain on x while the executor waits
    behind a sleeping kernel (10 us per operator: longer than the
    launches), median over rounds."""
    times = []
    for _ in range(rounds + 1):  # the first round warms up
        torch.foo.synchronize()
        torch.foo._sleep(OPS * 10 / 1000)
        start = time.perf_counter()
        chain_on(x)()
        times.append((time.perf_counter() - start) / OPS * 1e6)
    torch.foo.synchronize()
    return statistics.median(times[1:])


def launch_breakdown() -> list[tuple[str, float]]:
    """The in-place multiply of the small-op chain, split by what each
    measurement includes:
    - meta device: Python, dispatch and the operator's C++ meta function
      (its argument checks and TensorIterator), the host's share on any
      device;
    - foo, host alone: the same plus foo's launch (device checks, capturing
      the operands, queueing on the stream), with the executor idle behind
      a sleeping kernel, timed up to the last launch;
    - foo, host beside a running executor: the same while the executor runs
      the kernels as they come, as in the chain;
    - foo with synchronize: the chain as the benchmark runs it;
    - CPU: the whole operator, kernel included, on the calling thread."""
    foo_x = torch.ones(1000, device="foo")
    host_alone = host_alone_us(foo_x)
    host_beside = per_op_us(chain_on(foo_x))
    torch.foo.synchronize()

    def synced() -> None:
        chain_on(foo_x)()
        torch.foo.synchronize()

    total = per_op_us(synced)
    cpu = per_op_us(chain_on(torch.ones(1000)))
    rows = []
    meta = meta_device_cpp_us()
    if meta is not None:
        rows.append(("meta device (Python, dispatch, C++ meta function)", meta))
    rows.append(("foo, host alone (the above + launch)", host_alone))
    if meta is not None:
        rows.append(("launch alone (difference)", host_alone - meta))
    rows += [("foo, host beside a running executor", host_beside),
             ("foo, chain then synchronize", total),
             ("CPU, whole operator", cpu)]
    return rows


def chains_in_threads(threads: int, device_of) -> float:
    """Operators per second when `threads` host threads each run a chain of
    OPS multiplies on their own tensor (and for foo their own stream), all
    started together; device_of(i) is thread i's device."""
    xs = [torch.ones(1000, device=device_of(i)) for i in range(threads)]
    streams = [torch.foo.Stream(x.device) if x.device.type == "foo" else None for x in xs]
    barrier = threading.Barrier(threads + 1)

    def work(i: int) -> None:
        barrier.wait()
        if streams[i] is None:
            chain_on(xs[i])()
            return
        with torch.foo.stream(streams[i]):
            chain_on(xs[i])()
        streams[i].synchronize()

    def run() -> float:
        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        return time.perf_counter() - start

    run()  # warm up
    return threads * OPS / statistics.median(run() for _ in range(5))


def scaling() -> list[tuple[int, float, float]]:
    """(threads, foo ops/s on 4 streams over 2 devices, CPU ops/s)."""
    foo_device = lambda i: torch.device("foo", i % min(2, torch.foo.device_count()))  # noqa: E731
    rows = []
    for threads in (1, 2, 4, 8):
        foo_rate = chains_in_threads(threads, foo_device)
        cpu_rate = chains_in_threads(threads, lambda i: torch.device("cpu"))
        rows.append((threads, foo_rate, cpu_rate))
    return rows


def main() -> None:
    print(f"torch threads: {torch.get_num_threads()}")
    print("| in-place multiply of 1,000 floats | us per operator |")
    print("|---|---|")
    for name, us in launch_breakdown():
        print(f"| {name} | {us:.2f} |")
    print()
    print("| host threads | foo ops/s (4 streams, 2 devices) | CPU ops/s | foo/CPU throughput |")
    print("|---|---|---|---|")
    for threads, foo_rate, cpu_rate in scaling():
        print(f"| {threads} | {foo_rate:,.0f} | {cpu_rate:,.0f} | {foo_rate / cpu_rate:.2f} |")


if __name__ == "__main__":
    main()
