"""The stream race detector: proves that multi-stream code is synchronized.

While it is on, every kernel, copy and memset on a foo device declares the
memory it reads and writes, and foo_sim checks each access against a
happens-before relation (program order per stream, events, ``wait_stream``,
host synchronizations, blocking copies). Two accesses to overlapping bytes,
at least one a write, that nothing orders are a race, whatever the timing.

Turn it on with ``FOO_SIM_RACE_CHECK=1`` (warn; ``raise`` to raise) for the
whole process, or for a block::

    with torch.foo.race_check(mode="raise"):
        train_step()

``warn`` warns once per pair of sites and goes on; ``raise`` raises
:class:`RaceError` at the launch that completes a race (that launch is not
queued). Races of the host with queued work (writing a pinned buffer that a
``non_blocking`` copy still reads) are raised by the thread's next foo
launch or synchronization. :func:`race_reports` lists what was found.
"""

import contextlib
import os
from typing import Iterator

from torch_foo import _C

_MODES = {"off": 0, "warn": 1, "raise": 2}
_NAMES = {v: k for k, v in _MODES.items()}


class RaceError(RuntimeError):
    """Two accesses to the same foo memory that no synchronization orders."""


_C._race_set_error_type(RaceError)


def race_check_mode() -> str:
    """The detector's mode: ``"off"``, ``"warn"`` or ``"raise"``."""
    return _NAMES[_C._race_get_mode()]


def set_race_check(mode: str) -> None:
    """Sets the mode; turning it on from off starts with no state or reports."""
    if mode not in _MODES:
        raise ValueError(f"race_check mode must be one of {sorted(_MODES)}, got {mode!r}")
    _C._race_set_mode(_MODES[mode])


@contextlib.contextmanager
def race_check(mode: str = "raise") -> Iterator[None]:
    """Runs the block with the race detector in ``mode`` (``"warn"`` or ``"raise"``).

    Work queued before the block is not tracked; the previous mode comes back
    after it. Reports stay readable with :func:`race_reports`.
    """
    if mode not in ("warn", "raise"):
        raise ValueError(f"race_check mode must be 'warn' or 'raise', got {mode!r}")
    previous = race_check_mode()
    set_race_check(mode)
    try:
        yield
    finally:
        set_race_check(previous)


def race_reports() -> list[dict]:
    """The races found since the detector was turned on, oldest first.

    Each is a dict: ``kind`` ("unordered", "use after free" or "host"),
    ``first`` and ``second`` (the two accesses: ``op``, ``access`` "read" or
    "write", ``tensor`` dtype and shape, ``site`` "file.py:line", ``device``,
    ``stream`` (the ``foo_stream`` handle, None for the host),
    ``default_stream``), ``bytes`` overlapping, ``count`` (times the same
    pair of sites raced), ``fix`` and ``message``.
    """
    return _C._race_reports()


def clear_race_reports() -> None:
    """Forgets the reports found so far."""
    _C._race_clear_reports()


# FOO_SIM_RACE_CHECK turns the detector on in foo_sim; the operator hook
# that declares accesses is registered here, without starting the device.
if os.environ.get("FOO_SIM_RACE_CHECK", "0").strip() not in ("", "0"):
    _C._race_get_mode()
