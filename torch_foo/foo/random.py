"""Random number generation on foo, with torch.cuda.random's API.

Each device has a default generator; torch.manual_seed seeds them all.
Generators need no initialized runtime, so seeding early is cheap.
"""

from collections.abc import Iterable

import torch

from torch_foo import _C
from torch_foo.foo._lazy import _is_in_bad_fork
from torch_foo.foo._utils import DeviceLike, _get_device_index


def _generator(device: DeviceLike) -> torch.Generator:
    # torch.cuda.random's functions make an int into torch.device, which
    # refuses a negative one: it does not mean the current device here.
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        raise RuntimeError(f"Invalid foo device index {device}: a device index must not be negative")
    return _C._default_generator(_get_device_index(device, optional=True))


def get_rng_state(device: DeviceLike = "foo") -> torch.Tensor:
    """The RNG state of ``device`` as a ByteTensor."""
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """The RNG states of all foo devices."""
    return [get_rng_state(i) for i in range(_C._device_count())]


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = "foo") -> None:
    """Restores the RNG state of ``device`` from get_rng_state's result."""
    _generator(device).set_state(new_state.clone(memory_format=torch.contiguous_format))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Restores the RNG states of all devices, in device order."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def _no_current_device() -> bool:
    # No device, or a child forked after foo was initialized: there is no
    # current device to seed. torch.cuda then queues the call for an
    # initialization that can never happen, i.e. ignores it, and so does foo.
    return _C._device_count() == 0 or _is_in_bad_fork()


def manual_seed(seed: int) -> None:
    """Seeds the current foo device's generator (ignored without a usable device, as by torch.cuda)."""
    if _no_current_device():
        return
    _generator(None).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds the generators of all foo devices (ignored in a child forked after initialization, as by torch.cuda)."""
    if _is_in_bad_fork():
        return
    for i in range(_C._device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic number (ignored as manual_seed is)."""
    if _no_current_device():
        return
    _generator(None).seed()


def seed_all() -> None:
    """Seeds every device with one non-deterministic number (ignored as manual_seed_all is)."""
    if _is_in_bad_fork():
        return
    value = _generator(0).seed() if _C._device_count() else None
    for i in range(1, _C._device_count()):
        _generator(i).manual_seed(value)


def initial_seed() -> int:
    """The seed of the current device's generator."""
    return _generator(None).initial_seed()
