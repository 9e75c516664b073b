"""Token data: a learnable synthetic stream or a memory-mapped uint16 token file,
addressed by a *global* sequence index so that sharding is a pure function of
(position, rank, world size).

The data position saved in checkpoints is the number of sequences the whole
job has consumed. Each optimizer step takes the next ``global_batch`` indices
and rank r keeps every world_size-th one (as DistributedSampler strides), so a
restart with another world size re-splits the same indices: nothing is
skipped or seen twice.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

from training.config import ConfigError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a counter-based hash, so any sequence is computable without state."""
    x = x.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


class SyntheticTokens:
    """Sequences that walk a fixed random cycle through the vocabulary, with some tokens replaced by noise.

    The next token is the cycle successor of the current one except where noise
    struck, so a model can learn it (the loss falls from ln(vocab) towards the
    noise entropy); every sequence is a pure function of (seed, index).
    """

    def __init__(self, vocab: int, seq_len: int, seed: int, noise: float = 0.1) -> None:
        self.vocab = vocab
        self.seq_len = seq_len
        self.seed = np.uint64(seed)
        self.salt = _mix(np.array([seed], dtype=np.uint64))[0]
        self.noise_threshold = np.uint64(int(noise * 2**32))
        self.cycle = np.random.default_rng(seed).permutation(vocab).astype(np.int64)

    def sequences(self, indices: np.ndarray) -> np.ndarray:
        """Tokens [len(indices), seq_len + 1] for the given global sequence indices."""
        idx = indices.astype(np.uint64)[:, None]
        pos = np.arange(self.seq_len + 1, dtype=np.uint64)[None, :]
        start = _mix(idx * _GOLDEN + self.seed) % np.uint64(self.vocab)
        tokens = self.cycle[((start + pos) % np.uint64(self.vocab)).astype(np.int64)]
        cell = _mix(_mix(idx ^ self.salt) + pos)
        noisy = (cell & np.uint64(0xFFFFFFFF)) < self.noise_threshold
        random_tokens = ((cell >> np.uint64(32)) % np.uint64(self.vocab)).astype(np.int64)
        return np.where(noisy, random_tokens, tokens)


class TokenFileError(ConfigError):
    """A token the model cannot embed, found by the one rank whose shard holds it (so that rank reports it)."""


class MemmapTokens:
    """Sequences cut from a flat uint16 token file, shuffled per epoch with a seeded permutation."""

    def __init__(self, path: str, vocab: int, seq_len: int, seed: int) -> None:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"token file '{path}' (setting 'data') does not exist")
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        self.path = path
        self.vocab = vocab
        self.seq_len = seq_len
        self.seed = seed
        self.count = (len(self.tokens) - 1) // seq_len
        if self.count < 1:
            raise ValueError(f"token file '{path}' holds {len(self.tokens)} tokens, fewer than seq_len + 1")
        self._epoch = -1
        self._order = np.empty(0, dtype=np.int64)

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch != self._epoch:
            self._order = np.random.default_rng([self.seed, epoch]).permutation(self.count)
            self._epoch = epoch
        return self._order

    def sequences(self, indices: np.ndarray) -> np.ndarray:
        out = np.empty((len(indices), self.seq_len + 1), dtype=np.int64)
        for row, index in enumerate(indices.tolist()):
            epoch, offset = divmod(index, self.count)
            start = int(self._permutation(epoch)[offset]) * self.seq_len
            out[row] = self.tokens[start : start + self.seq_len + 1]
        if out.max(initial=0) >= self.vocab:
            raise TokenFileError(
                f"Token file '{self.path}' (setting 'data') holds token id {int(out.max())}, outside model "
                f"vocabulary of {self.vocab}; use a 'model' whose vocabulary covers the tokenizer."
            )
        return out


def open_source(data: str, vocab: int, seq_len: int, seed: int) -> SyntheticTokens | MemmapTokens:
    if data == "synthetic":
        return SyntheticTokens(vocab, seq_len, seed)
    return MemmapTokens(data, vocab, seq_len, seed)


class ShardedBatches:
    """Yields one rank's micro-batches for each optimizer step and tracks the global data position.

    With ``prefetch``, a background thread builds the next step's tokens on the host while the current step runs:
    building them takes tens of ms of CPU per step (the synthetic stream's hashing, or reads from a token file),
    and done between steps that time is a gap in the GPU's work once its launch queue drains. ``position`` still
    counts only what was handed out, so checkpoints stay exact.
    """

    def __init__(
        self,
        source,
        rank: int,
        world_size: int,
        micro_batch: int,
        accum: int,
        position: int = 0,
        device: torch.device | None = None,
        prefetch: bool = False,
    ) -> None:
        self.source = source
        self.rank = rank
        self.world_size = world_size
        self.micro_batch = micro_batch
        self.accum = accum
        self.global_batch = micro_batch * world_size * accum
        self.position = position
        self.device = device or torch.device("cpu")
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") if prefetch else None
        self._pending: tuple[int, Future] | None = None

    def rank_indices(self, position: int) -> np.ndarray:
        """This rank's sequence indices for the step starting at ``position``."""
        return position + self.rank + self.world_size * np.arange(self.micro_batch * self.accum, dtype=np.int64)

    def _host_tokens(self, position: int) -> torch.Tensor:
        tokens = torch.from_numpy(self.source.sequences(self.rank_indices(position)))
        return tokens.pin_memory() if self.device.type == "cuda" else tokens

    def next_step(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The ``accum`` (inputs, targets) micro-batches of the next step, already on the device."""
        if self._pending is not None and self._pending[0] == self.position:
            tokens = self._pending[1].result()
        else:
            tokens = self._host_tokens(self.position)
        self.position += self.global_batch
        if self._prefetcher is not None:
            self._pending = (self.position, self._prefetcher.submit(self._host_tokens, self.position))
        tokens = tokens.to(self.device, non_blocking=True)
        micro = tokens.view(self.accum, self.micro_batch, -1)
        return [(micro[a, :, :-1].contiguous(), micro[a, :, 1:].contiguous()) for a in range(self.accum)]
