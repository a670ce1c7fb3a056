"""transformers' device spec for foo (``TRANSFORMERS_TEST_DEVICE_SPEC``).

transformers imports a spec by its file name from the spec's directory
(``TRANSFORMERS_TEST_DEVICE_SPEC=spec.py``, run from that directory): an
absolute path does not work. So put beside your tests a file that imports
this one::

    # foo_spec.py
    from torch_foo.testing.transformers_device_spec import *  # noqa: F401,F403

and run ``TRANSFORMERS_TEST_DEVICE_SPEC=foo_spec.py python -m pytest tests/``
from that directory. ``transformers.testing_utils.torch_device`` is then
``"foo"`` and its ``backend_*`` helpers act on foo.
"""

import sys

import torch

DEVICE_NAME = "foo"
MANUAL_SEED_FN = torch.foo.manual_seed
EMPTY_CACHE_FN = torch.foo.empty_cache
DEVICE_COUNT_FN = torch.foo.device_count

__all__ = ["DEVICE_COUNT_FN", "DEVICE_NAME", "EMPTY_CACHE_FN", "MANUAL_SEED_FN"]

# transformers (5.24) takes only the functions above from a spec; its other
# backend_* tables (synchronize, memory statistics, the accelerator module)
# would answer with their CPU defaults for "foo" (nothing to synchronize,
# 0 bytes allocated). This module is imported while testing_utils itself is
# being imported, after those tables exist: give them foo's functions.
_FOO_BACKEND_FUNCTIONS = {
    "BACKEND_SYNCHRONIZE": torch.foo.synchronize,
    "BACKEND_MEMORY_ALLOCATED": torch.foo.memory_allocated,
    "BACKEND_MAX_MEMORY_ALLOCATED": torch.foo.max_memory_allocated,
    "BACKEND_RESET_MAX_MEMORY_ALLOCATED": torch.foo.reset_max_memory_allocated,
    "BACKEND_RESET_PEAK_MEMORY_STATS": torch.foo.reset_peak_memory_stats,
    "BACKEND_TORCH_ACCELERATOR_MODULE": torch.foo,
}
_testing_utils = sys.modules.get("transformers.testing_utils")
for _name, _function in _FOO_BACKEND_FUNCTIONS.items():
    _table = getattr(_testing_utils, _name, None)
    if isinstance(_table, dict):
        _table.setdefault(DEVICE_NAME, _function)
