"""Deterministic fault injection, for testing a program's own error paths.

A spec is a comma-separated list of faults:

- ``oom@N``: the N-th allocation request the caching allocator receives
  (tensor allocations on any foo device, not segments) raises
  ``torch.OutOfMemoryError``, as a real out-of-memory does;
- ``kernel@OP:N``: the N-th launch of operator ``OP`` (the kernel's name
  as the profiler shows it on foo's device, ``aten::mm``; ``mm`` alone
  means ``aten::mm``, and a name without overload matches every overload)
  fails on the device; the error is reported at the next synchronization,
  naming the operator, as a kernel error is.

Each fault fires once. ``FOO_SIM_FAULTS=SPEC`` arms a spec for the whole
process, counted from the runtime's start; :func:`inject_faults` arms one
for a block, counted from its start. A fault leaves the allocator and the
device as a real failure does: nothing leaks, and the device stays usable.
"""

import contextlib
from typing import Iterator

from torch_foo import _C


@contextlib.contextmanager
def inject_faults(spec: str) -> Iterator[None]:
    """Arms the faults of ``spec`` for the block, counted from its start, in place of those armed
    before (``FOO_SIM_FAULTS``, an enclosing block), which are armed again after it with their
    counts as they were.

    Raises ValueError for a malformed spec."""
    problem = _C._faults_check(spec)
    if problem:
        raise ValueError(f"fault spec {spec!r}: {problem}")
    _C._faults_push(spec)
    try:
        yield
    finally:
        _C._faults_pop()
