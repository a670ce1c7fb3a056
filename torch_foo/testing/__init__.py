"""Testing device-agnostic code on foo.

- ``pytest --foo``: the pytest plugin (``torch_foo_pytest``, whose device
  side is :mod:`torch_foo.testing._plugin`): each test owns its device
  errors; ``--foo-strict``, ``--foo-report``, ``--foo-faults``.
- :func:`inject_faults`: fault injection for a block of code.
- Device specs for the test machinery libraries already have, as files
  (``python -m torch_foo testing-paths`` prints their paths):
  ``transformers_device_spec.py`` (``TRANSFORMERS_TEST_DEVICE_SPEC``),
  ``diffusers_device_spec.py`` (``DIFFUSERS_TEST_DEVICE_SPEC``) and
  ``torch_test_base.py`` (PyTorch's ``TORCH_TEST_DEVICES``).

docs/guide/testing-your-library.md shows them in a library's CI.
"""

import os

from torch_foo.testing._faults import inject_faults

_HERE = os.path.dirname(os.path.abspath(__file__))

# The files each test machinery loads by path; what testing-paths prints.
SPEC_FILES = {
    "TRANSFORMERS_TEST_DEVICE_SPEC": os.path.join(_HERE, "transformers_device_spec.py"),
    "DIFFUSERS_TEST_DEVICE_SPEC": os.path.join(_HERE, "diffusers_device_spec.py"),
    "TORCH_TEST_DEVICES": os.path.join(_HERE, "torch_test_base.py"),
}

__all__ = ["SPEC_FILES", "inject_faults"]
