"""Registers fooccl with torch.distributed (called when torch_foo loads)."""

import threading
from datetime import timedelta

BACKEND_NAME = "fooccl"

_lock = threading.Lock()
_registered = False


def _create_backend(store, rank: int, world_size: int, timeout: timedelta):
    """c10d's creator for fooccl: a gloo group carries foo tensors' data, a
    second one, under its own store prefix, the ranks' collective fingerprints
    and point-to-point headers, and a
    third the CPU tensors' collectives (which must never pair with foo's)."""
    import torch.distributed as dist

    from torch_foo import _C

    gloo = dist.ProcessGroupGloo(store, rank, world_size, timeout)
    fingerprints = dist.ProcessGroupGloo(dist.PrefixStore("fooccl_fingerprints", store), rank, world_size, timeout)
    host = dist.ProcessGroupGloo(dist.PrefixStore("fooccl_host", store), rank, world_size, timeout)
    return _C._distributed.FooBackend(gloo, fingerprints, host, rank, world_size, timeout)


def register() -> None:
    """Makes ``fooccl`` the default c10d backend of foo; safe to call twice.

    torch.distributed is already loaded by ``import torch``, so this costs
    no import time. Without distributed support in torch, nothing happens.
    """
    global _registered
    with _lock:
        if _registered:
            return
        import torch.distributed as dist

        if not dist.is_available():
            return
        from torch_foo import _C

        _C._init_distributed()
        # devices must be a list: a string would be read letter by letter.
        # "cpu" too, so that init_process_group("fooccl") also takes CPU
        # tensors (handed to gloo as they are); the default backend of cpu
        # stays gloo.
        dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["foo", "cpu"])
        _C._distributed._set_split_creator(_create_backend)
        _registered = True
