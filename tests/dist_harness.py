"""Runs a function in several spawned processes that form one process group.

Each rank is its own process (as with torchrun), on 127.0.0.1 only (gloo on
the loopback interface), rendezvous through a FileStore in the test's
temporary directory (no port to pick, so tests may run in parallel). The
whole job has a timeout; ranks still running then are killed and the test
fails, so a hang never blocks the suite.
"""

import multiprocessing
import os
import queue
import time
import traceback
from datetime import timedelta

import pytest

# A rank function may return this to leave at once, as a crashed process
# would: no destroy_process_group, no interpreter shutdown.
DIE = "__die__"


def init(rank: int, world: int, store_path: str, backend="cpu:gloo,foo:fooccl", timeout_s: float = 60, **kwargs):
    """init_process_group for a rank of the job, each rank on its own foo device."""
    import torch
    import torch.distributed as dist

    device = torch.device("foo", rank % torch.foo.device_count())
    torch.foo.set_device(device)
    dist.init_process_group(
        backend,
        init_method=f"file://{store_path}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
        **kwargs,
    )
    return device


def _child(fn, rank, world, store_path, args, results, env):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    os.environ.update(env)  # before the first foo call: foo_sim reads its variables then
    try:
        value = fn(rank, world, store_path, *args)
        if not (isinstance(value, str) and value == DIE):
            results.put((rank, "ok", value))
    except BaseException:  # noqa: BLE001 - reported to the parent
        results.put((rank, "error", traceback.format_exc()))
        return
    if isinstance(value, str) and value == DIE:
        results.close()
        results.join_thread()
        os._exit(1)


def run_ranks(fn, world: int, tmp_path, *args, timeout: float = 90, allow_dead=(), env=None):
    """Runs ``fn(rank, world, store_path, *args)`` on ``world`` ranks; returns their results by rank
    (None for the ranks in ``allow_dead``, which may return DIE). ``env`` is added to each
    rank's environment."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    store_path = str(tmp_path / f"store-{fn.__name__}")
    procs = [ctx.Process(target=_child, args=(fn, r, world, store_path, args, results, env or {})) for r in range(world)]
    for p in procs:
        p.start()
    done, errors = {}, []
    deadline = time.monotonic() + timeout
    try:
        while len(set(done) | set(allow_dead)) + len(errors) < world:
            try:
                rank, status, value = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if status == "ok":
                done[rank] = value
            else:
                errors.append(f"rank {rank}:\n{value}")
    finally:
        for p in procs:
            p.join(timeout=max(0.1, min(10, deadline - time.monotonic())))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    if errors:
        pytest.fail("\n".join(errors))
    missing = sorted(set(range(world)) - set(done) - set(allow_dead))
    if missing:
        pytest.fail(f"ranks {missing} did not finish within {timeout} s")
    return [done.get(r) for r in range(world)]
