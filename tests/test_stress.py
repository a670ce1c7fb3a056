"""Many host threads, devices and streams at once, with the hazards that matter
(CPU scalars changed after launch, tensors used on side streams and freed),
checked against CPU: no crash, no hang, no wrong number."""

import os

import pytest

from conftest import run_python_json

pytestmark = pytest.mark.slow  # runs for FOO_STRESS_SECONDS

SECONDS = float(os.environ.get("FOO_STRESS_SECONDS", "20"))


def test_threads_devices_and_streams_at_once():
    out = run_python_json(f"""
        import json, threading, time
        import torch

        DEADLINE = time.monotonic() + {SECONDS}
        failures, rounds = [], [0] * 4

        def reference(seed):
            g = torch.Generator().manual_seed(seed)
            x = torch.rand(256, generator=g)
            s = float(seed % 7 + 1)
            y = (x * s + s) ** 2
            z = torch.where(y > y.mean(), y, -y).cumsum(0)
            return torch.cat([z[::3], x.sort().values]).sum()

        def worker(rank):
            device = torch.device("foo", rank % 2)
            torch.foo.set_device(device)
            streams = [torch.foo.Stream(device) for _ in range(3)]
            seed = rank * 100_000
            try:
                while time.monotonic() < DEADLINE:
                    results = []
                    for k, stream in enumerate(streams):
                        seed += 1
                        g = torch.Generator().manual_seed(seed)
                        x_cpu = torch.rand(256, generator=g)
                        scalar = torch.tensor(float(seed % 7 + 1))
                        with torch.foo.stream(stream):
                            if k == 0:
                                torch.foo._sleep(0.2)          # keep streams busy now and then
                            x = x_cpu.to(device, non_blocking=True)
                            y = (x * scalar + scalar) ** 2
                            scalar.fill_(-1000.0)              # the host moves on: must not matter
                            z = torch.where(y > y.mean(), y, -y).cumsum(0)
                            total = torch.cat([z[::3], x.sort().values]).sum()
                        done = stream.record_event()
                        x.record_stream(stream)
                        del x, y, z                            # freed while their work may be queued
                        results.append((seed, total, done))
                    for s, total, done in results:
                        torch.foo.current_stream(device).wait_event(done)
                        got = total.item()
                        want = reference(s).item()
                        if abs(got - want) > 1e-3 * max(1.0, abs(want)):
                            failures.append((rank, s, got, want))
                    rounds[rank] += 1
            except Exception as e:  # reported below, never swallowed
                failures.append((rank, repr(e)))

        threads = [threading.Thread(target=worker, args=(r,)) for r in range(4)]
        for t in threads: t.start()
        for t in threads: t.join(timeout={SECONDS} + 120)
        print(json.dumps({{"failures": failures[:5], "rounds": rounds, "alive": any(t.is_alive() for t in threads)}}))
    """, timeout=SECONDS + 240)
    assert not out["alive"], "a worker hung"
    assert out["failures"] == []
    assert min(out["rounds"]) > 0
