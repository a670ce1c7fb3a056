"""Copies the next batch to the device while the current one trains."""

from typing import Iterable, Iterator

import torch


class Prefetcher:
    """Iterates ``(inputs, targets)`` CPU batches as device batches, copying batch i+1 on a side
    stream while the caller computes on batch i (pinned memory, non-blocking copies).

    Each batch is handed over ordered after its copy (the caller's stream waits for the side
    stream) and tied to the caller's stream (``record_stream``), so its memory is not reused while
    the caller may still read it.
    """

    def __init__(self, batches: Iterable, device: torch.device) -> None:
        self._batches = batches
        self._device = torch.device(device)
        self._accelerated = self._device.type != "cpu"

    def _to_device(self, batch, stream):
        if not self._accelerated:
            return batch
        with stream:
            return tuple(t.pin_memory().to(self._device, non_blocking=True) for t in batch)

    def __iter__(self) -> Iterator:
        side = torch.Stream(device=self._device) if self._accelerated else None
        pending = None
        for batch in self._batches:
            ready = self._to_device(batch, side)
            if pending is not None:
                yield self._hand_over(pending, side)
            pending = ready
        if pending is not None:
            yield self._hand_over(pending, side)

    def _hand_over(self, batch, side):
        if not self._accelerated:
            return batch
        current = torch.accelerator.current_stream(self._device)
        current.wait_stream(side)
        for t in batch:
            t.record_stream(current)
        return batch
