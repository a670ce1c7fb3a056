"""Streams and events on foo, with torch.cuda's API."""

from typing import Any, Optional

import torch

from torch_foo import _C
from torch_foo.foo._device import device as _device_ctx
from torch_foo.foo._lazy import _lazy_init
from torch_foo.foo._utils import DeviceLike, _get_device_index


class Stream(torch.Stream):
    """A queue of work on a foo device; work on different streams may overlap.

    ``Stream(device=None, priority=0)`` takes a stream from the device's pool.
    Lower priority numbers are higher priorities, clamped to
    ``Stream.priority_range()``, as on CUDA.
    """

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if kwargs:  # wrapping an existing stream: stream_id, device_index, device_type
            if device is not None or priority != 0:
                raise ValueError("Stream(stream_id=...) takes neither device nor priority")
            return super().__new__(cls, **kwargs)
        index = _get_device_index(device, optional=True)
        _lazy_init()
        if index < 0:  # as torch.cuda.Stream, whose device context ignores a negative index
            index = _C._get_device()
        return super().__new__(cls, device=torch.device("foo", index), priority=priority)

    @staticmethod
    def _wrap(stream: torch.Stream) -> "Stream":
        return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(least, greatest) priority: the numerically larger one is the lowest."""
        return _C._stream_priority_range()

    @property
    def priority(self) -> int:
        """This stream's priority."""
        return _C._stream_priority(self)

    @property
    def foo_stream(self) -> int:
        """The address of the underlying foo_sim stream (``fooStream_t``)."""
        return _C._stream_native_handle(self)

    def wait_event(self, event: torch.Event) -> None:
        """Work queued on this stream from now on waits for ``event``'s latest record."""
        if isinstance(event, Event):
            event.wait(self)
        else:
            super().wait_event(event)

    def record_event(self, event: Optional["Event"] = None) -> "Event":
        """Records ``event`` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __repr__(self) -> str:
        return f"<torch.foo.Stream device={self.device} foo_stream={self.foo_stream:#x}>"


class ExternalStream(Stream):
    """Wraps a stream created directly with foo_sim (``fooStream_t`` address).

    The caller keeps it alive for as long as torch uses it.
    """

    def __new__(cls, stream_ptr: int, device: DeviceLike = None) -> "ExternalStream":
        index = _get_device_index(device, optional=True)
        _lazy_init()
        wrapped = _C._stream_from_external(stream_ptr, index)
        return super().__new__(
            cls, stream_id=wrapped.stream_id, device_index=wrapped.device_index, device_type=wrapped.device_type
        )


class Event(torch.Event):
    """A marker in a stream, for synchronization and timing.

    ``enable_timing=True`` allows ``elapsed_time``. ``blocking`` is accepted
    for compatibility; host waits always complete, possibly spinning briefly.
    ``interprocess=True`` makes an event another process can use, as
    torch.cuda's: ``ipc_handle()`` names it, ``Event.from_ipc_handle`` opens
    it there, and pickling it for torch.multiprocessing sends it; records,
    queries and waits in every process see each other. It cannot time.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> "Event":
        if interprocess and enable_timing:
            raise RuntimeError("An interprocess event cannot measure time: create it with enable_timing=False")
        _lazy_init()
        if not interprocess:
            event = super().__new__(cls, device="foo", enable_timing=enable_timing, blocking=blocking)
            event._ipc = None
            return event
        # Its handle exists from the start, so the device is fixed now: the current one.
        index = _C._get_device()
        event = super().__new__(cls, device=torch.device("foo", index), blocking=blocking)
        event._ipc = _C._IpcEvent(index)
        return event

    @classmethod
    def from_ipc_handle(cls, device: DeviceLike, handle: bytes) -> "Event":
        """Opens, on ``device``, the interprocess event another process's ``ipc_handle()`` gave."""
        index = _get_device_index(device, optional=True)
        _lazy_init()
        if index < 0:
            index = _C._get_device()
        event = super().__new__(cls, device=torch.device("foo", index))
        event._ipc = _C._IpcEvent(index, handle)
        return event

    def ipc_handle(self) -> bytes:
        """The bytes that name this event to another process (``interprocess=True`` only)."""
        if getattr(self, "_ipc", None) is None:
            raise RuntimeError("Only an Event(interprocess=True) has an IPC handle")
        return self._ipc.ipc_handle()

    def record(self, stream: Optional[torch.Stream] = None) -> None:
        """Records the event on ``stream`` (default: the current stream)."""
        stream = stream if stream is not None else current_stream()
        if getattr(self, "_ipc", None) is not None:
            self._ipc.record(stream)
        else:
            super().record(stream)

    def wait(self, stream: Optional[torch.Stream] = None) -> None:
        """Makes ``stream`` (default: the current stream) wait for this event; the host does not wait."""
        stream = stream if stream is not None else current_stream()
        if getattr(self, "_ipc", None) is not None:
            self._ipc.block(stream)
        else:
            super().wait(stream)

    def query(self) -> bool:
        """True when the work before the latest record is done."""
        if getattr(self, "_ipc", None) is not None:
            return self._ipc.query()
        return super().query()

    def synchronize(self) -> None:
        """Waits for the work before the latest record."""
        if getattr(self, "_ipc", None) is not None:
            self._ipc.synchronize()
        else:
            super().synchronize()

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event to ``end_event``; both recorded with timing and completed."""
        if getattr(self, "_ipc", None) is not None or getattr(end_event, "_ipc", None) is not None:
            raise RuntimeError("An interprocess event cannot measure time (it is created without timing)")
        return _C._event_elapsed_time(self, end_event)

    def __repr__(self) -> str:
        return f"<torch.foo.Event device_index={self.device.index if self.device else None}>"


def current_stream(device: DeviceLike = None) -> Stream:
    """The calling thread's current stream on ``device`` (default: current device)."""
    _lazy_init()
    return Stream._wrap(_C._current_stream(_get_device_index(device, optional=True)))


def default_stream(device: DeviceLike = None) -> Stream:
    """The default stream of ``device`` (default: current device)."""
    _lazy_init()
    return Stream._wrap(_C._default_stream(_get_device_index(device, optional=True)))


def set_stream(stream: Optional[torch.Stream]) -> None:
    """Makes ``stream`` current on its device and makes that device current, as torch.cuda.set_stream."""
    if stream is None:
        return
    if stream.device.type != "foo":
        raise ValueError(f"torch.foo.set_stream expects a foo stream, got a stream of device {stream.device}")
    _lazy_init()
    _C._set_device(stream.device_index)
    _C._set_stream(stream)


class StreamContext:
    """Context manager that makes ``stream`` current (and its device) and restores both after."""

    def __init__(self, stream: Optional[torch.Stream]) -> None:
        self.stream = stream
        self.src_prev_stream: Optional[Stream] = None
        self.dst_prev_stream: Optional[Stream] = None

    def __enter__(self) -> None:
        if self.stream is None:
            return
        self.src_prev_stream = current_stream()
        if self.src_prev_stream.device != self.stream.device:
            with _device_ctx(self.stream.device):
                self.dst_prev_stream = current_stream()
        set_stream(self.stream)

    def __exit__(self, *args: object) -> None:
        if self.stream is None:
            return
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    """``with torch.foo.stream(s):`` runs the block with ``s`` as the current stream."""
    return StreamContext(stream)


def _sleep(ms: float) -> None:
    """Queues a kernel that sleeps ``ms`` milliseconds on the current stream (for tests)."""
    _lazy_init()
    _C._sleep(float(ms))


def _gate() -> "_C._Gate":
    """Queues a kernel that holds the current stream until ``gate.open()`` (for tests).

    The gate opens by itself when the returned object is destroyed, so that a
    failing test does not leave the stream held.
    """
    _lazy_init()
    return _C._Gate()
