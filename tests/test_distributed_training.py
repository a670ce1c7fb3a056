"""DDP and FSDP2 on foo with fooccl, against a single-process reference
that trains the same model on the concatenated batch."""

import torch

from dist_harness import init, run_ranks

STEPS = 3
PER_RANK = 4


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 16)
        self.c = torch.nn.Linear(16, 4)
        self.unused = torch.nn.Linear(16, 4)   # for find_unused_parameters

    def forward(self, x, use_unused=False):
        h = torch.relu(self.b(torch.relu(self.a(x))))
        return self.c(h) + (self.unused(h) if use_unused else 0)


def _batches(world, micro):
    g = torch.Generator().manual_seed(1)
    return [[(torch.randn(world * PER_RANK, 8, generator=g), torch.randn(world * PER_RANK, 4, generator=g))
             for _ in range(micro)] for _ in range(STEPS)]


def _model(dev):
    torch.manual_seed(0)
    return Net().to(dev)


def _train(model, batches, dev, rank, world, *, sharded, amp=False, no_sync=None, use_unused=False, collect=True):
    """SGD steps; with `sharded`, each rank takes its slice of every batch."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("foo", init_scale=256.0) if amp else None
    for step in batches:
        opt.zero_grad()
        for i, (x, y) in enumerate(step):
            if sharded:
                x, y = x[rank * PER_RANK:(rank + 1) * PER_RANK], y[rank * PER_RANK:(rank + 1) * PER_RANK]
            x, y = x.to(dev), y.to(dev)
            last = i == len(step) - 1
            ctx = no_sync() if (no_sync is not None and not last) else _null()
            with ctx, torch.autocast("foo", dtype=torch.bfloat16, enabled=amp):
                loss = torch.nn.functional.mse_loss(model(x, use_unused=use_unused).float(), y)
            (scaler.scale(loss) if amp else loss).backward()
        if amp:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
    return {n: p.detach().cpu() for n, p in model.named_parameters()} if collect else None


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _ddp(rank, world, dev, only=None):
    from torch.nn.parallel import DistributedDataParallel as DDP

    results = {}
    cases = {
        # Tiny buckets: several allreduces per backward, overlapping it.
        "buckets": dict(ddp=dict(bucket_cap_mb=0.0005), micro=1),
        "no_sync": dict(ddp=dict(), micro=2, no_sync=True),
        # One layer takes no part in the forward pass.
        "unused": dict(ddp=dict(find_unused_parameters=True), micro=1, skip_layer=True),
        "amp": dict(ddp=dict(), micro=1, amp=True),
    }
    for name, case in cases.items():
        if only is not None and name not in only:
            continue
        batches = _batches(world, case["micro"])
        # Ranks start from different weights: DDP must broadcast rank 0's.
        torch.manual_seed(rank)
        model = Net().to(dev)
        if rank == 0:
            model.load_state_dict(_model(dev).state_dict())
        ddp = DDP(model, device_ids=None, **case["ddp"])
        use_all = not case.get("skip_layer", False)
        got = _train(ddp, batches, dev, rank, world, sharded=True, amp=case.get("amp", False),
                     no_sync=ddp.no_sync if case.get("no_sync") else None, use_unused=use_all)
        got = {k.removeprefix("module."): v for k, v in got.items()}
        want = _train(_model(dev), batches, dev, rank, world, sharded=False, amp=case.get("amp", False),
                      use_unused=use_all)
        tol = dict(rtol=2e-2, atol=2e-3) if case.get("amp") else dict(rtol=1e-5, atol=1e-6)
        for k in want:
            torch.testing.assert_close(got[k], want[k], **tol, msg=lambda m: f"{name} {k} rank {rank}: {m}")
        results[name] = True
    return results


def _fsdp(rank, world, dev):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    results = {}
    for name, (reshard, mp) in {
        "reshard": (True, None),
        "keep": (False, None),
        "mixed": (True, MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)),
    }.items():
        batches = _batches(world, 1)
        model = _model(dev)
        kwargs = dict(reshard_after_forward=reshard)
        if mp is not None:
            kwargs["mp_policy"] = mp
        for layer in (model.a, model.b, model.c, model.unused):
            fully_shard(layer, **kwargs)
        fully_shard(model, **kwargs)
        _train(model, batches, dev, rank, world, sharded=True, use_unused=True, collect=False)
        got = {k: p.full_tensor().detach().cpu() for k, p in model.named_parameters()}
        want = _train(_model(dev), batches, dev, rank, world, sharded=False, use_unused=True)
        tol = dict(rtol=2e-2, atol=2e-3) if mp is not None else dict(rtol=1e-5, atol=1e-6)
        for k in want:
            torch.testing.assert_close(got[k], want[k], **tol, msg=lambda m: f"{name} {k} rank {rank}: {m}")
        results[name] = True
    return results


def _sync_batch_norm(rank, world, dev):
    """nn.SyncBatchNorm under DDP, ranks with batches of different sizes
    (3 and 5 samples) in channels-last, against BatchNorm2d on the whole
    batch: outputs, input gradients, parameters and running statistics
    after two SGD steps."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())

    g = torch.Generator().manual_seed(2)
    sizes = [3 + 2 * r for r in range(world)]
    xs = [torch.randn(sum(sizes), 3, 6, 6, generator=g) for _ in range(2)]
    start = sum(sizes[:rank])
    ref = net()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    model = DDP(torch.nn.SyncBatchNorm.convert_sync_batchnorm(net()).to(dev).to(memory_format=torch.channels_last))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    assert isinstance(model.module[1], torch.nn.SyncBatchNorm)
    close = {}
    for step, x in enumerate(xs):
        full = x.clone().requires_grad_()
        want = ref(full)
        want.square().mean().backward()
        part = x[start:start + sizes[rank]].to(dev).contiguous(memory_format=torch.channels_last).requires_grad_()
        got = model(part)
        # The ranks' losses add up to the reference's, times the world size
        # that DDP divides the gradients by. Through the synchronized
        # statistics, each rank's input gradient is that of the sum.
        (got.square().sum() / want.numel() * world).backward()
        ref_opt.step()
        ref_opt.zero_grad()
        opt.step()
        opt.zero_grad()
        close[f"out{step}"] = torch.allclose(got.cpu(), want[start:start + sizes[rank]], rtol=1e-4, atol=1e-5)
        close[f"grad{step}"] = torch.allclose(part.grad.cpu(), full.grad[start:start + sizes[rank]] * world,
                                              rtol=1e-4, atol=1e-6)
    for name, p in ref.named_parameters():
        close[name] = torch.allclose(dict(model.module.named_parameters())[name].cpu(), p.detach(), rtol=1e-4,
                                     atol=1e-6)
    bn, ref_bn = model.module[1], ref[1]
    close["running_mean"] = torch.allclose(bn.running_mean.cpu(), ref_bn.running_mean, atol=1e-5)
    close["running_var"] = torch.allclose(bn.running_var.cpu(), ref_bn.running_var, atol=1e-5)
    return close


def _tensor_parallel(rank, world, dev):
    """DTensor, functional collectives and tensor parallelism over a foo
    device mesh, against the same computation on one CPU process."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("foo", (world,))
    out = {}
    t = torch.full((4,), float(rank + 1), device=dev)
    out["all_reduce"] = funcol.all_reduce(t, "sum", mesh).cpu().tolist() == [float(world * (world + 1) // 2)] * 4
    out["all_gather"] = funcol.all_gather_tensor(t, 0, mesh).cpu().tolist() == [
        float(r + 1) for r in range(world) for _ in range(4)]
    g = torch.Generator().manual_seed(3)
    full = torch.randn(8, 6, generator=g)
    d = distribute_tensor(full.to(dev), mesh, [Shard(0)])
    out["shard"] = d.to_local().device == dev and torch.equal(d.to_local().cpu(), full.chunk(world)[rank])
    out["replicate"] = torch.equal(d.redistribute(mesh, [Replicate()]).to_local().cpu(), full)
    torch.manual_seed(1)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.load_state_dict(ref.state_dict())
    model = parallelize_module(model.to(dev), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(5, 6, generator=g)
    y = model(x.to(dev))
    want = ref(x)
    out["forward"] = torch.allclose(y.cpu(), want, atol=1e-5)
    y.sum().backward()
    want.sum().backward()
    out["grad"] = all(torch.allclose(getattr(model[i], n).grad.full_tensor().cpu(), getattr(ref[i], n).grad, atol=1e-5)
                      for i in (0, 2) for n in ("weight", "bias"))
    return out


def _two_ranks(rank, world, store):
    import torch.distributed as dist

    dev = init(rank, world, store)
    out = {"ddp": _ddp(rank, world, dev), "fsdp": _fsdp(rank, world, dev),
           "sync_batch_norm": _sync_batch_norm(rank, world, dev), "tensor_parallel": _tensor_parallel(rank, world, dev)}
    dist.destroy_process_group()
    return out


def test_ddp_fsdp2_sync_batch_norm_and_tensor_parallel_on_two_ranks_match_single_process(tmp_path):
    for out in run_ranks(_two_ranks, 2, tmp_path, timeout=150):
        assert out["ddp"] == {"buckets": True, "no_sync": True, "unused": True, "amp": True}
        assert out["fsdp"] == {"reshard": True, "keep": True, "mixed": True}
        assert out["sync_batch_norm"] and all(out["sync_batch_norm"].values()), str(out["sync_batch_norm"])
        assert out["tensor_parallel"] == dict.fromkeys(
            ("all_reduce", "all_gather", "shard", "replicate", "forward", "grad"), True), out["tensor_parallel"]


def _four_ranks(rank, world, store):
    import torch.distributed as dist

    # No backend named: foo's default (fooccl), on the device given.
    dev = init(rank, world, store, backend=None, device_id=torch.device("foo", rank % torch.foo.device_count()))
    out = {"backend": dist.get_backend(), "ddp": _ddp(rank, world, dev, only={"buckets"})}
    # Subgroups: the odd ranks, and a group each rank makes with its pair.
    odd = dist.new_group([1, 3])
    t = torch.full((4,), float(rank), device=dev)
    if rank in (1, 3):
        dist.all_reduce(t, group=odd)
        out["odd"] = t.cpu().tolist()
    dist.destroy_process_group()
    return out


def test_ddp_on_four_ranks_with_the_default_backend(tmp_path):
    for rank, out in enumerate(run_ranks(_four_ranks, 4, tmp_path, timeout=150)):
        assert out["backend"] == "fooccl"
        assert out["ddp"] == {"buckets": True}
        if rank in (1, 3):
            assert out["odd"] == [4.0] * 4


def test_the_shipped_ddp_example_trains_under_torchrun(tmp_path):
    # README's command, as a user runs it (on a free port, as --standalone picks).
    import os
    import re
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             os.path.join(root, "examples", "ddp_train.py")],
                            capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "DDP on 2 processes, backend fooccl" in result.stdout
    losses = [float(m) for m in re.findall(r"step +\d+ +loss ([0-9.]+)", result.stdout)]
    assert len(losses) == 30 and losses[-1] < losses[0] / 2, losses


SLOW_FORWARD_MS = 50


def _ddp_timing(rank, world, store):
    import os
    import tempfile
    import warnings

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = init(rank, world, store)

    class Slow(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x):
            torch.foo._sleep(SLOW_FORWARD_MS)  # device time the host does not wait for
            return self.lin(x)

    # C++ warnings reach Python's or stderr, by how they are raised: both are watched.
    with tempfile.TemporaryFile() as err, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            model = DDP(Slow().to(dev))
            for _ in range(4):
                model(torch.randn(4, 8, device=dev)).sum().backward()
            torch.foo.synchronize()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        said = err.read().decode(errors="replace") + "".join(str(w.message) for w in caught)
    data = model._get_ddp_logging_data()
    dist.destroy_process_group()
    return {"said": said, **{k: data.get(k, -1) for k in (
        "avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time")}}


def test_ddp_logs_device_times_of_forward_backward_and_communication(tmp_path):
    # DDP times its steps with the device's timer, foo events here as CUDA
    # events on a GPU: the forward's time is the device's (it includes the
    # sleeping kernel the host never waited for).
    for out in run_ranks(_ddp_timing, 2, tmp_path, timeout=150):
        assert "Time stats are currently only collected" not in out["said"], out["said"]
        assert out["avg_forward_compute_time"] >= SLOW_FORWARD_MS * 1_000_000, out
        assert out["avg_backward_compute_time"] > 0 and out["avg_backward_comm_time"] > 0, out
