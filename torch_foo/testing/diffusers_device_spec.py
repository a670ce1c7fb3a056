"""diffusers' device spec for foo (``DIFFUSERS_TEST_DEVICE_SPEC``).

diffusers imports a spec by its path without ``.py`` as a module name, from
``sys.path``: put beside your tests a file that imports this one::

    # foo_spec.py
    from torch_foo.testing.diffusers_device_spec import *  # noqa: F401,F403

and run ``DIFFUSERS_TEST_DEVICE_SPEC=foo_spec.py python -m pytest tests/``
from that directory (``python -m`` puts it on ``sys.path``).

The keys are those diffusers' ``testing_utils`` reads from a spec.
"""

import torch

DEVICE_NAME = "foo"
MANUAL_SEED_FN = torch.foo.manual_seed
EMPTY_CACHE_FN = torch.foo.empty_cache
DEVICE_COUNT_FN = torch.foo.device_count
# foo runs autograd and optimizers as CUDA does.
SUPPORTS_TRAINING = True
RESET_PEAK_MEMORY_STATS_FN = torch.foo.reset_peak_memory_stats
RESET_MAX_MEMORY_ALLOCATED_FN = torch.foo.reset_max_memory_allocated
MAX_MEMORY_ALLOCATED_FN = torch.foo.max_memory_allocated

__all__ = ["DEVICE_COUNT_FN", "DEVICE_NAME", "EMPTY_CACHE_FN", "MANUAL_SEED_FN", "MAX_MEMORY_ALLOCATED_FN",
           "RESET_MAX_MEMORY_ALLOCATED_FN", "RESET_PEAK_MEMORY_STATS_FN", "SUPPORTS_TRAINING"]
