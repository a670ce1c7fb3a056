"""A short DDP training run on foo, one process per foo device.

    torchrun --nproc-per-node 2 examples/ddp_train.py

Each rank fits the same linear target from its own random batches; DDP
averages the gradients over fooccl (foo's default c10d backend), and rank 0
prints the loss averaged over the ranks.
"""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 30


def main() -> None:
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("foo", local_rank % torch.foo.device_count())
    torch.foo.set_device(device)
    # No backend named: foo's default, fooccl. The rendezvous comes from
    # torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE).
    dist.init_process_group(device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # DDP broadcasts rank 0's weights anyway
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device)
    model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    target = torch.randn(16, 1, generator=torch.Generator().manual_seed(0))
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own batches
    if rank == 0:
        print(f"DDP on {world} processes, backend {dist.get_backend()}, device {device}")
    for step in range(STEPS):
        x = torch.randn(64, 16, generator=data)
        y = x @ target + 0.01 * torch.randn(64, 1, generator=data)
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step:3d}  loss {mean_loss.item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
