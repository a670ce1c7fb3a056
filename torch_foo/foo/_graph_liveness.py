"""``check_input_liveness`` for foo graphs, as torch 2.13 gives CUDA graphs.

A graph reads the memory of the tensors its capture read from outside it
(model weights, static inputs, pinned host buffers), at the addresses they
had then. If one of them is freed before a replay, the replay reads memory
that belongs to something else now: no error, wrong numbers. With the
check on, the capture notes every such tensor (with where the capture
read it), and each replay first makes sure that each still holds its
memory; otherwise it raises, naming where the capture read the tensor and
where it was let go.
"""

from __future__ import annotations

import os
import traceback
import weakref
from typing import Any, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_iter

_SHOWN = 5  # dead inputs described in full; the rest are counted


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _stack() -> str:
    # The caller's frames: without torch's own (dispatch modes, wrappers)
    # and this module's.
    frames = [f for f in traceback.extract_stack()
              if not f.filename.startswith(_TORCH_DIR) and not f.filename.endswith("_graph_liveness.py")]
    return "".join(traceback.format_list(frames))


class _ExternalInput:
    """One tensor the capture read from outside the graph."""

    __slots__ = ("address", "device", "storage", "storage_address", "read_at", "freed_at", "__weakref__")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.address = tensor.data_ptr()
        self.device = tensor.device.index if tensor.device.type == "foo" else None
        self.read_at = _stack()
        self.freed_at: Optional[str] = None
        storage = tensor.untyped_storage()
        self.storage_address = storage.data_ptr()
        me = weakref.ref(self)

        def on_free(_: Any) -> None:
            this = me()
            if this is not None:
                try:
                    this.freed_at = _stack()
                except Exception:  # noqa: BLE001 - never raise from a finalizer
                    pass

        self.storage = weakref.ref(storage, on_free)

    def alive(self) -> bool:
        storage = self.storage()
        # A storage resized to nothing (as FSDP frees parameters) or to
        # another block no longer holds the memory the graph reads.
        return storage is not None and storage.data_ptr() == self.storage_address


def _watched(t: torch.Tensor) -> bool:
    # Dense tensors only: a sparse one has no data pointer of its own (its
    # indices and values are not followed).
    return t.layout == torch.strided and (t.device.type == "foo" or t.is_pinned())


class _CaptureWatch(TorchDispatchMode):
    """Sees every operator called during the capture, on the capturing thread."""

    supports_higher_order_operators = True

    def __init__(self, tracker: InputLivenessTracker) -> None:
        super().__init__()
        self.tracker = tracker

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        kwargs = kwargs or {}
        tensors = [v for v in tree_iter((args, kwargs)) if isinstance(v, torch.Tensor)]
        device = next((t.device for t in tensors if t.device.type == "foo"), None)
        # Only what a capture records: operators on foo whose device's
        # current stream captures (not eager work on another stream or
        # device in a relaxed capture, nor CPU operators in the body).
        if device is not None and torch.foo.current_stream(device).is_capturing():
            for t in tensors:
                if _watched(t):
                    self.tracker.read(t)
        out = func(*args, **kwargs)
        for v in tree_iter(out):
            if isinstance(v, torch.Tensor) and v.device.type == "foo" and v.layout == torch.strided:
                self.tracker.made(v)
        return out


class InputLivenessTracker:
    """The external inputs of one capture, checked before each replay."""

    def __init__(self) -> None:
        self._inputs: dict[int, _ExternalInput] = {}
        self._made_inside: set[int] = set()
        self._watch: Optional[_CaptureWatch] = None

    def start(self) -> None:
        self._watch = _CaptureWatch(self)
        self._watch.__enter__()

    def stop(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.__exit__(None, None, None)

    def read(self, tensor: torch.Tensor) -> None:
        address = tensor.data_ptr()
        if address and address not in self._made_inside and address not in self._inputs:
            self._inputs[address] = _ExternalInput(tensor)

    def made(self, tensor: torch.Tensor) -> None:
        address = tensor.data_ptr()
        if address and address not in self._inputs:
            self._made_inside.add(address)

    def check(self, pool: tuple[int, int]) -> None:
        dead = [i for i in self._inputs.values() if not i.alive()]
        if dead:
            held = _live_blocks_of_pool(pool)
            # Memory the graph's own pool still holds for a live block is
            # the graph's (an output of another graph sharing the pool).
            dead = [i for i in dead if not any(d == i.device and a <= i.address < a + s for d, a, s in held)]
        if not dead:
            return
        parts = [f"foo graph replay: {len(dead)} tensor(s) that the capture read from outside the graph "
                 "have been freed since; the replay would read memory that now belongs to something else. "
                 "Keep them alive as long as the graph is replayed.\n"]
        for n, info in enumerate(dead[:_SHOWN], 1):
            parts.append(f"Freed tensor #{n} (data_ptr={info.address:#x}), read by the capture at:\n{info.read_at}")
            if info.freed_at:
                parts.append(f"  and freed at:\n{info.freed_at}")
        if len(dead) > _SHOWN:
            parts.append(f"... and {len(dead) - _SHOWN} more\n")
        raise RuntimeError("".join(parts))


def _live_blocks_of_pool(pool: tuple[int, int]) -> list[tuple[int, int, int]]:
    blocks = []
    for segment in torch.foo.memory._snapshot()["segments"]:
        if tuple(segment["segment_pool_id"]) != tuple(pool):
            continue
        for block in segment["blocks"]:
            if block["state"].startswith("active"):
                blocks.append((segment["device"], block["address"], block["size"]))
    return blocks
