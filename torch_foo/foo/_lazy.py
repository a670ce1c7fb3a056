"""Lazy initialization of foo and the fork rule, as torch.cuda does it."""

import threading

from torch_foo import _C

_initialized = False
_lock = threading.Lock()
_tls = threading.local()


def _is_in_bad_fork() -> bool:
    """True in a child forked after foo was initialized: foo is unusable there."""
    return _C._is_in_bad_fork()


def is_initialized() -> bool:
    """Whether the foo runtime has been initialized in this process."""
    return _initialized and not _is_in_bad_fork()


def _lazy_init() -> None:
    """Initializes the foo runtime on first use; torch calls this too."""
    global _initialized
    if is_initialized() or getattr(_tls, "is_initializing", False):
        return
    with _lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize foo in forked subprocess. To use foo with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        if _C._device_count() == 0:
            raise RuntimeError(f"Found no foo devices: {_C._no_device_reason()}")
        _tls.is_initializing = True
        try:
            _C._init()
        finally:
            _tls.is_initializing = False
        _initialized = True


def init() -> None:
    """Initializes foo now instead of at its first use."""
    _lazy_init()
