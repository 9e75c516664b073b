"""Token data: a learnable synthetic stream or memory-mapped token files, addressed by a *global* sequence index, so
that sharding is a pure function of (position, rank, world size) (``training.batching``).

The data position saved in checkpoints is the number of sequences the whole job has consumed: a restart with another
world size re-splits the same indices, so nothing is skipped or seen twice. A held-out set for the validation loss
is kept apart from the training order: the last ``eval_sequences`` sequences of the token files, or for the synthetic
stream indices that training never reaches.
"""

from __future__ import annotations

import glob
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from training.batching import StepSplit
from training.config import ConfigError, TrainConfig

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
HELD_OUT_BASE = 1 << 63
"""Synthetic sequences from here on are the held-out set; training indices stay far below."""
EVAL_ROWS_DIVISOR = 4
"""Validation micro-batches are the training micro-batch over this (ShardedBatches.held_out says why)."""
LLMC_HEADER_INT32S = 256
"""llm.c's token shards (karpathy/llm.c dev/data/data_common.py) start with 256 int32s: magic, version, token count."""
LLMC_FORMATS = {(20240520, 1): np.uint16, (20240801, 7): np.uint32}
"""(magic, version) -> token dtype of llm.c's GPT-2 and Llama-3 shards."""


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

    def __init__(self, vocab: int, seq_len: int, seed: int, held_out: int = 0, noise: float = 0.1) -> None:
        self.vocab = vocab
        self.seq_len = seq_len
        self.held_out = held_out
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

    def held_out_sequences(self, indices: np.ndarray) -> np.ndarray:
        """Tokens of held-out sequences 0 .. held_out - 1."""
        return self.sequences(indices.astype(np.uint64) + np.uint64(HELD_OUT_BASE))


class TokenFileError(ConfigError):
    """A token the model cannot embed, found by the one rank whose shard holds it (so that rank reports it)."""


def _shard_paths(data: str) -> list[str]:
    """The token files 'data' names: a file, every *.bin of a directory, or a glob pattern's matches; name order."""
    if os.path.isdir(data):
        paths = sorted(str(p) for p in Path(data).glob("*.bin") if p.is_file())
    elif any(char in data for char in "*?["):
        paths = sorted(p for p in glob.glob(data) if os.path.isfile(p))
    else:
        paths = [data] if os.path.isfile(data) else []
    if not paths:
        raise FileNotFoundError(f"'{data}' (setting 'data') names no token file (a file, a directory of *.bin "
                                "shards or a glob pattern)")
    return paths


def _open_shard(path: str, dtype: str) -> np.ndarray:
    """A shard's tokens, memory-mapped: after llm.c's header where it has one, else the whole file as ``dtype``."""
    header = np.fromfile(path, dtype=np.int32, count=LLMC_HEADER_INT32S)
    if len(header) == LLMC_HEADER_INT32S and (int(header[0]), int(header[1])) in LLMC_FORMATS:
        token_type = LLMC_FORMATS[(int(header[0]), int(header[1]))]
        return np.memmap(path, dtype=token_type, mode="r", offset=4 * LLMC_HEADER_INT32S, shape=(int(header[2]),))
    token_type = np.dtype(dtype)
    if os.path.getsize(path) % token_type.itemsize:
        raise ValueError(f"token file '{path}' is not a whole number of {dtype} tokens (setting 'data_dtype')")
    return np.memmap(path, dtype=token_type, mode="r")


class TokenFiles:
    """Sequences cut from token shards (none spans two), the held-out set at the end, the rest shuffled per epoch
    with a seeded permutation."""

    def __init__(self, data: str, dtype: str, vocab: int, seq_len: int, seed: int, held_out: int) -> None:
        self.data = data
        self.shards = [_open_shard(path, dtype) for path in _shard_paths(data)]
        self.vocab = vocab
        self.seq_len = seq_len
        self.seed = seed
        counts = np.array([max(0, (len(tokens) - 1) // seq_len) for tokens in self.shards], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        total = int(self.starts[-1])
        self.held_out = held_out
        self.count = total - held_out
        if self.count < 1:
            raise ValueError(
                f"'{data}' (setting 'data') holds {total} sequences of seq_len + 1 = {seq_len + 1} tokens, and "
                f"eval_sequences={held_out} of them are held out: none is left to train on"
            )
        self._epoch = -1
        self._order = np.empty(0, dtype=np.int64)

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch != self._epoch:
            self._order = np.random.default_rng([self.seed, epoch]).permutation(self.count)
            self._epoch = epoch
        return self._order

    def _read(self, sequence_numbers: np.ndarray) -> np.ndarray:
        out = np.empty((len(sequence_numbers), self.seq_len + 1), dtype=np.int64)
        shards = np.searchsorted(self.starts, sequence_numbers, side="right") - 1
        for row, (number, shard) in enumerate(zip(sequence_numbers.tolist(), shards.tolist(), strict=True)):
            start = (number - int(self.starts[shard])) * self.seq_len
            out[row] = self.shards[shard][start : start + self.seq_len + 1]
        if out.max(initial=0) >= self.vocab:
            raise TokenFileError(
                f"Token file '{self.data}' (setting 'data') holds token id {int(out.max())}, outside model "
                f"vocabulary of {self.vocab}; use a 'model' whose vocabulary covers the tokenizer."
            )
        return out

    def sequences(self, indices: np.ndarray) -> np.ndarray:
        epochs, offsets = np.divmod(indices.astype(np.int64), self.count)
        numbers = np.array([self._permutation(e)[o] for e, o in zip(epochs.tolist(), offsets.tolist(), strict=True)],
                           dtype=np.int64)
        return self._read(numbers)

    def held_out_sequences(self, indices: np.ndarray) -> np.ndarray:
        return self._read(self.count + indices.astype(np.int64))


def open_source(cfg: TrainConfig) -> SyntheticTokens | TokenFiles:
    vocab = cfg.size.data_vocab
    if cfg.data == "synthetic":
        return SyntheticTokens(vocab, cfg.seq_len, cfg.seed, cfg.eval_sequences)
    try:
        return TokenFiles(cfg.data, cfg.data_dtype, vocab, cfg.seq_len, cfg.seed, cfg.eval_sequences)
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"Cannot read training data: {err}. Set 'data' to 'synthetic' or to token files."
        ) from None


class MicroBatch(NamedTuple):
    inputs: torch.Tensor
    targets: torch.Tensor
    weight: float
    """Factor on this micro-batch's mean loss (``StepSplit.weight``)."""
    last: bool
    """The rank's last micro-step of the step: the one whose backward all-reduces the gradients."""


def _to_device(tokens: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cuda":
        return tokens.pin_memory().to(device, non_blocking=True)
    return tokens


def micro_batches(tokens: torch.Tensor, split: StepSplit, rank: int) -> list[MicroBatch]:
    """The rank's step tokens [share, seq_len + 1] cut into its micro-steps; empty ones are left out."""
    out, start = [], 0
    chunks = split.chunks(rank)
    for number, rows in enumerate(chunks):
        if rows:
            part = tokens[start : start + rows]
            out.append(MicroBatch(part[:, :-1].contiguous(), part[:, 1:].contiguous(), split.weight(rows),
                                  number == len(chunks) - 1))
        start += rows
    return out


class ShardedBatches:
    """Yields one rank's micro-batches for each optimizer step and tracks the global data position.

    With ``prefetch``, a background thread builds the next step's tokens on the host while the current step runs:
    building them takes tens of ms of CPU per step (the synthetic stream's hashing, or reads from token files),
    and done between steps that time is a gap in the GPU's work once its launch queue drains. ``position`` still
    counts only what was handed out, so checkpoints stay exact.
    """

    def __init__(
        self,
        source,
        split: StepSplit,
        rank: int,
        position: int = 0,
        device: torch.device | None = None,
        prefetch: bool = False,
        sequence_log: str = "",
    ) -> None:
        self.source = source
        self.split = split
        self.rank = rank
        self.position = position
        self.device = device or torch.device("cpu")
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") if prefetch else None
        self._pending: tuple[int, Future] | None = None
        self._log = None
        if sequence_log:
            Path(sequence_log).mkdir(parents=True, exist_ok=True)
            self._log = open(Path(sequence_log) / f"rank-{rank}.jsonl", "a", buffering=1)  # noqa: SIM115 (closed in close())

    def _host_tokens(self, position: int) -> torch.Tensor:
        return torch.from_numpy(self.source.sequences(self.split.indices(position, self.rank)))

    def next_step(self) -> list[MicroBatch]:
        """The micro-batches of the next step, already on the device."""
        if self._pending is not None and self._pending[0] == self.position:
            tokens = self._pending[1].result()
        else:
            tokens = self._host_tokens(self.position)
        if self._log is not None:
            step = self.position // self.split.global_batch
            self._log.write(json.dumps({"step": step, "ids": self.split.indices(self.position, self.rank).tolist()})
                            + "\n")
        self.position += self.split.global_batch
        if self._prefetcher is not None:
            self._pending = (self.position, self._prefetcher.submit(self._host_tokens, self.position))
        return micro_batches(_to_device(tokens, self.device), self.split, self.rank)

    def held_out(self) -> list[MicroBatch]:
        """This rank's part of the held-out set (every world_size-th sequence from its rank on), in micro-batches
        weighted by their share of the set, so the sum over ranks is the set's mean loss.

        They are a quarter of the training micro-batch: validation runs the model as is, not compiled, and without
        the compiler's fusions PyTorch's loss keeps about 10 bytes per logit (the logits and their fp32 softmax),
        a little more per row than a compiled training micro-step keeps in all; at a quarter the rows it stays well
        inside the memory the training micro-batch was picked to fit."""
        count = self.source.held_out
        indices = np.arange(self.rank, count, self.split.world_size, dtype=np.int64)
        if not len(indices):
            return []
        tokens = _to_device(torch.from_numpy(self.source.held_out_sequences(indices)), self.device)
        rows = max(1, self.split.micro_batch // EVAL_ROWS_DIVISOR)
        return [MicroBatch(part[:, :-1].contiguous(), part[:, 1:].contiguous(), len(part) / count, False)
                for part in tokens.split(rows)]

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
        if self._prefetcher is not None:
            self._prefetcher.shutdown(wait=True)
