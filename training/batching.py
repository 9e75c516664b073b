"""How one optimizer step's global batch is split over the ranks and their micro-steps, at any world size.

Step k trains on the global sequence indices ``k * global_batch ... (k + 1) * global_batch - 1`` whatever the world
size; rank r takes every world_size-th of them from r on (as DistributedSampler strides), so the shares of two ranks
differ by at most one sequence. Every rank runs the same number of micro-steps (DDP runs one all-reduce per step, on
each rank's last micro-step, and the ranks must agree on when that is), so a share is cut into that many chunks of
near-equal size, smaller ones first: only where ``micro_batch`` is 1 can a chunk be empty, and then it is a first
one, skipped without a forward (it carries no all-reduce). Each chunk's mean loss is weighted by
``rows x world_size / global_batch``, so DDP's average over ranks is exactly the mean over the step's sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.config import ConfigError, most_ranks


@dataclass(frozen=True)
class StepSplit:
    global_batch: int
    world_size: int
    micro_batch: int
    """The most sequences one forward pass takes on a rank."""

    def __post_init__(self) -> None:
        if self.world_size > most_ranks(self.global_batch):
            raise ConfigError(
                f"{self.world_size} ranks but global_batch={self.global_batch}: every rank needs at least one "
                f"sequence per step. Set 'global_batch' to at least {self.world_size}, or run on fewer ranks."
            )

    def share(self, rank: int) -> int:
        """Sequences rank ``rank`` takes per step."""
        base, extra = divmod(self.global_batch, self.world_size)
        return base + (rank < extra)

    @property
    def micro_steps(self) -> int:
        """Forward/backward passes per step, the same on every rank."""
        largest_share = -(-self.global_batch // self.world_size)
        return -(-largest_share // self.micro_batch)

    def chunks(self, rank: int) -> list[int]:
        """Rows of each of rank ``rank``'s micro-steps, smaller first (an empty one only first, never the last)."""
        small, larger = divmod(self.share(rank), self.micro_steps)
        return [small] * (self.micro_steps - larger) + [small + 1] * larger

    @property
    def largest_chunk(self) -> int:
        """The most rows any rank's micro-step has (rank 0's share is a largest one)."""
        return self.chunks(0)[-1]

    def weight(self, rows: int) -> float:
        """Factor on a micro-batch's mean loss: its share of the step's sequences, times the world size that DDP's
        average divides by."""
        return rows * self.world_size / self.global_batch

    def indices(self, position: int, rank: int) -> np.ndarray:
        """Rank ``rank``'s global sequence indices for the step that starts at data position ``position``."""
        return position + rank + self.world_size * np.arange(self.share(rank), dtype=np.int64)
