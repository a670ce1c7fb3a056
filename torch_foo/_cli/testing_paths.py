"""``python -m torch_foo testing-paths [NAME]``: where the device specs are.

transformers and diffusers import a spec by file name from the working
directory, so their specs are meant to be imported by a file of the user's
(docs/guide/testing-your-library.md); PyTorch's ``TORCH_TEST_DEVICES`` takes the
path itself: ``TORCH_TEST_DEVICES=$(python -m torch_foo testing-paths torch)``.
"""

import sys

from torch_foo.testing import SPEC_FILES

# The name a user types for each spec, and the variable that loads it.
_NAMES = {
    "transformers": "TRANSFORMERS_TEST_DEVICE_SPEC",
    "diffusers": "DIFFUSERS_TEST_DEVICE_SPEC",
    "torch": "TORCH_TEST_DEVICES",
}


def testing_paths(argv: list[str]) -> int:
    if not argv:
        for name, variable in _NAMES.items():
            print(f"{name:<13}{variable:<31}{SPEC_FILES[variable]}")
        return 0
    if len(argv) == 1 and argv[0] in _NAMES:
        print(SPEC_FILES[_NAMES[argv[0]]])
        return 0
    print(f"python -m torch_foo testing-paths: expected one of {', '.join(_NAMES)} or nothing, got {' '.join(argv)!r}",
          file=sys.stderr)
    return 2
