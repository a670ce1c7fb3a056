"""Which device to train on."""

import torch


def default_device() -> torch.device:
    """The current accelerator (CUDA, foo, ...) if there is one, else the CPU."""
    accelerator = torch.accelerator.current_accelerator()
    return accelerator if accelerator is not None else torch.device("cpu")
