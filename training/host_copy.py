"""Copies of the job's tensors into host buffers allocated once, so keeping a step's state (training.last_step) costs
the loop next to nothing on a GPU.

On a GPU the buffers are pinned and the device-to-host copies are enqueued non-blocking on a side stream that first
waits for the work already on the current stream (the step that made the state); the current stream waits for the
copies only before it next changes the state (``before_update``, before the optimizer's step), so the next step's
forward and backward run while the copy engine works. A reader waits on the slot's event (``HostSlot.wait``). Without
CUDA the copies are plain, done before ``copy`` returns.
"""

from __future__ import annotations

import torch


def _key(value: torch.Tensor) -> tuple:
    """Tensors with one key are one tensor (tied weights): they share one buffer, so the saved file shares them too."""
    return value.untyped_storage().data_ptr(), value.storage_offset(), value.shape, value.stride(), value.dtype


class HostSlot:
    """One set of host buffers, one per distinct tensor of the state, reused from step to step."""

    def __init__(self, pinned: bool) -> None:
        self.pinned = pinned
        self.buffers: dict[tuple, torch.Tensor] = {}
        self.done = torch.cuda.Event() if pinned else None

    def fill(self, value, non_blocking: bool):
        """``value`` with every tensor replaced by its buffer, the copy into it enqueued."""
        if isinstance(value, torch.Tensor):
            key = _key(value)
            buffer = self.buffers.get(key)
            if buffer is None:
                buffer = self.buffers[key] = torch.empty(value.shape, dtype=value.dtype, pin_memory=self.pinned)
            return buffer.copy_(value.detach(), non_blocking=non_blocking)
        if isinstance(value, dict):
            return {name: self.fill(item, non_blocking) for name, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.fill(item, non_blocking) for item in value)
        return value

    def wait(self) -> None:
        """Block until the slot's copies have landed in host memory."""
        if self.done is not None:
            self.done.synchronize()


class SideCopies:
    """Copies a state into a ``HostSlot``: on a side CUDA stream on a GPU, plainly on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self._last: torch.cuda.Event | None = None

    def slot(self) -> HostSlot:
        return HostSlot(pinned=self.cuda)

    def copy(self, state, slot: HostSlot):
        """``state`` copied into ``slot`` (its host structure, the copies in flight on a GPU)."""
        if not self.cuda:
            return slot.fill(state, non_blocking=False)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            copied = slot.fill(state, non_blocking=True)
            slot.done.record(self.stream)
        self._last = slot.done
        return copied

    def before_update(self) -> None:
        """Make the current stream wait for the copies in flight before it changes the tensors they read."""
        if self._last is not None:
            torch.cuda.current_stream(self.device).wait_event(self._last)
            self._last = None
