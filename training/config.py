"""Typed settings for the training job.

One dataclass, ``TrainConfig``, is the single source of truth: the command
line (``--steps 40 --model tiny``) and the cluster planner's stack-file ``job``
object (``TrainConfig.from_overrides({"microBatch": 8})``) both map onto its
fields, so a setting cannot exist in one place and not the other.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import re
import typing
from dataclasses import dataclass, field


class ConfigError(ValueError):
    """A setting is wrong; the message names it and says how to fix it."""


@dataclass(frozen=True)
class ModelSize:
    """Shape of one named GPT model."""

    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    """Embedding rows; GPT-2's 50257 padded to 50304 (a multiple of 128) for fast matmuls."""
    data_vocab: int
    """Token ids the data may contain (the unpadded vocabulary)."""


MODEL_SIZES: dict[str, ModelSize] = {
    "tiny": ModelSize(n_layer=2, n_head=2, n_embd=64, vocab_size=256, data_vocab=256),
    "gpt2": ModelSize(n_layer=12, n_head=12, n_embd=768, vocab_size=50304, data_vocab=50257),
    "gpt2-medium": ModelSize(n_layer=24, n_head=16, n_embd=1024, vocab_size=50304, data_vocab=50257),
    "gpt2-large": ModelSize(n_layer=36, n_head=20, n_embd=1280, vocab_size=50304, data_vocab=50257),
    "gpt2-xl": ModelSize(n_layer=48, n_head=25, n_embd=1600, vocab_size=50304, data_vocab=50257),
}


def _doc(text: str, **extra: typing.Any) -> typing.Any:
    return field(metadata={"doc": text}, **extra)


@dataclass
class TrainConfig:
    """Every setting of a training run, with its default."""

    model: str = _doc(f"Named model size: one of {', '.join(MODEL_SIZES)}.", default="gpt2")
    seq_len: int = _doc("Tokens per sequence (context length).", default=1024)
    bias: bool = _doc(
        "Biases in the linear layers and LayerNorms, as GPT-2 had. Off by default, as in nanoGPT's training setup "
        "and most models since: the same loss curve, 2-3% faster on an H200. A checkpoint resumes only with the "
        "setting it was written with.",
        default=False,
    )
    dropout: float = _doc(
        "Dropout on the attention weights, the embeddings and each block's residual branches (0 for pre-training, "
        "as nanoGPT; 0.1 is usual for fine-tuning). Each rank draws its own masks, so runs at different world "
        "sizes differ where it is on; a resume at any world size continues each rank's random stream.",
        default=0.0,
    )
    global_batch: int = _doc(
        "Sequences per optimizer step across all ranks; kept fixed when the world size changes.",
        default=512,
    )
    micro_batch: int = _doc(
        "The most sequences per forward/backward pass on one rank; 0 picks it at start-up from two measured "
        "micro-steps: the rank's share up to 65,536 tokens if that fills at most 90% of the GPU, else the largest "
        "power of two below it that does (on the CPU, the share up to 65,536 tokens). The global batch is exact "
        "whatever it is: shares and micro-batches may be uneven.",
        default=0,
    )
    steps: int = _doc("Optimizer steps to train for (total, counting steps before a resume).", default=1000)
    lr: float = _doc("Peak learning rate of AdamW.", default=6e-4)
    min_lr_ratio: float = _doc("Cosine schedule floor as a fraction of lr.", default=0.1)
    warmup_steps: int = _doc("Linear learning-rate warm-up steps.", default=100)
    weight_decay: float = _doc("AdamW weight decay on matrices (not on biases, norms).", default=0.1)
    beta1: float = _doc("AdamW beta1.", default=0.9)
    beta2: float = _doc("AdamW beta2.", default=0.95)
    grad_clip: float = _doc("Clip the global gradient norm to this; 0 disables clipping.", default=1.0)
    seed: int = _doc("Seed for initialisation and the synthetic data stream.", default=1337)
    data: str = _doc(
        "'synthetic' for the built-in learnable token stream, or local token files: one file, a directory of shards "
        "(every *.bin in it, in name order) or a glob pattern; raw tokens of 'data_dtype', or shards with llm.c's "
        "256-int32 header (their own dtype).",
        default="synthetic",
    )
    data_dtype: str = _doc(
        "Token type of raw token files: 'uint16' (GPT-2's vocabulary) or 'uint32'.", default="uint16"
    )
    eval_every: int = _doc("Held-out validation loss every N steps and after the last; 0 never.", default=100)
    eval_sequences: int = _doc(
        "Sequences in the held-out set: the last ones of the token files, never trained on (for 'synthetic', a "
        "stream of its own); 0 holds none out and turns validation off.",
        default=64,
    )
    sequence_log: str = _doc(
        "Directory where each rank appends the global indices of the sequences it trains on, one JSON line per "
        "step (rank-<R>.jsonl): an audit that a resume neither skips nor repeats data. Empty: no log.",
        default="",
    )
    run_dir: str = _doc("Directory for metrics, TensorBoard events and summary.json.", default="runs/default")
    checkpoint_dir: str = _doc(
        "Directory for checkpoints, on each node's own disk (every node keeps a copy; shared storage also works); "
        "empty means <run_dir>/checkpoints.",
        default="",
    )
    checkpoint_every: int = _doc("Write a checkpoint every N steps; 0 only on signals and at the end.", default=200)
    keep_checkpoints: int = _doc("Keep the last K checkpoints.", default=3)
    checkpoint_at_end: bool = _doc("Write a checkpoint after the last step.", default=True)
    resume: bool = _doc(
        "Resume from the newest valid checkpoint any node holds in its checkpoint_dir, when one exists.", default=True
    )
    log_every: int = _doc("Read the loss back from the device and log metrics every N steps.", default=10)
    compile: str = _doc("torch.compile: 'auto' (on for CUDA, off for CPU), 'on' or 'off'.", default="auto")
    compile_mode: str = _doc(
        "torch.compile mode: 'default' or 'max-autotune-no-cudagraphs' (slower start, tuned matmuls).",
        default="default",
    )
    activation_checkpointing: bool = _doc(
        "Recompute each block's activations in backward to save memory.", default=False
    )
    sdpa_backend: str = _doc(
        "Attention kernel: 'auto' (PyTorch's choice), 'flash', 'cudnn' or 'efficient'.", default="auto"
    )
    dtype: str = _doc(
        "Autocast dtype: 'auto' (bf16 on CUDA, fp32 on CPU), 'bf16', 'fp32' or 'fp64' (the whole model in float64, "
        "on the CPU: for checks that two runs compute the same numbers).",
        default="auto",
    )
    residual_stream: str = _doc(
        "Precision of the residual stream between blocks: 'auto' keeps it in the autocast dtype (bf16 on GPUs, "
        "as llm.c does; 5% faster on an H200) or 'fp32' (nanoGPT's choice: fp32 embeddings and sums).",
        default="auto",
    )
    kernels: str = _doc(
        "The job's fused GPU kernels (training/kernels: the MLP with GELU inside its cuBLASLt matmuls, the output "
        "layer and loss as one Triton step, its matmuls in FP8 on GPUs with FP8 tensor cores): 'auto' uses each that "
        "passes its start-up self-test on this GPU in bf16 (a warning names any that does not: PyTorch's ops run "
        "instead), 'off' runs PyTorch's ops and leaves them out of the nodes' code bundle.",
        default="auto",
    )
    device: str = _doc("'auto' (CUDA if available, else CPU), 'cuda' or 'cpu'.", default="auto")
    bucket_cap_mb: int = _doc("DDP gradient bucket size in MiB.", default=100)
    peak_tflops: float = _doc(
        "Peak dense bf16 TFLOP/s of one device for MFU; 0 looks the device name up in a built-in table.",
        default=0.0,
    )
    memory_limit_gb: float = _doc(
        "Device memory budget for the pre-flight check; 0 uses free CUDA memory (and skips the check on CPU).",
        default=0.0,
    )
    stop_after_steps: int = _doc(
        "Exit cleanly (with a checkpoint) after this many steps of this process; 0 means run to 'steps'. "
        "For tests and drills of interrupted runs.",
        default=0,
    )
    timing_warmup_steps: int = _doc(
        "Steps left out of the summary's throughput figures (compilation, allocator warm-up).", default=1
    )
    progress: bool = _doc("Show a progress bar on rank 0 when stdout is a terminal.", default=True)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def size(self) -> ModelSize:
        return MODEL_SIZES[self.model]

    def resolved_checkpoint_dir(self) -> str:
        return self.checkpoint_dir or f"{self.run_dir.rstrip('/')}/checkpoints"

    def validate(self) -> None:
        """Check settings that do not depend on the world size."""
        if self.model not in MODEL_SIZES:
            raise ConfigError(
                f"Unknown model size '{self.model}' (setting 'model'). Choose one of: {', '.join(MODEL_SIZES)}."
            )
        size = self.size
        if size.n_embd % size.n_head:
            raise ConfigError(f"Model '{self.model}': n_embd must be divisible by n_head.")
        for name in (
            "seq_len",
            "global_batch",
            "steps",
            "keep_checkpoints",
            "log_every",
            "bucket_cap_mb",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"Setting '{name}' must be at least 1 (got {getattr(self, name)}).")
        at_least_zero = (
            "micro_batch",
            "warmup_steps",
            "eval_every",
            "eval_sequences",
            "weight_decay",
            "grad_clip",
            "checkpoint_every",
            "peak_tflops",
            "memory_limit_gb",
            "stop_after_steps",
            "timing_warmup_steps",
        )
        for name, ok, rule in (
            *((f.name, math.isfinite(getattr(self, f.name)), "a finite number") for f in _float_fields()),
            ("lr", self.lr > 0, "greater than 0"),
            ("min_lr_ratio", 0 <= self.min_lr_ratio <= 1, "between 0 and 1"),
            ("dropout", 0 <= self.dropout < 1, "at least 0 and below 1"),
            ("beta1", 0 <= self.beta1 < 1, "at least 0 and below 1"),
            ("beta2", 0 <= self.beta2 < 1, "at least 0 and below 1"),
            *((name, getattr(self, name) >= 0, "at least 0") for name in at_least_zero),
        ):
            if not ok:
                raise ConfigError(f"Setting '{name}' must be {rule} (got {getattr(self, name)}).")
        for name, allowed in (
            ("compile", ("auto", "on", "off")),
            ("dtype", ("auto", "bf16", "fp32", "fp64")),
            ("data_dtype", ("uint16", "uint32")),
            ("device", ("auto", "cuda", "cpu")),
            ("compile_mode", ("default", "max-autotune-no-cudagraphs")),
            ("sdpa_backend", ("auto", "flash", "cudnn", "efficient")),
            ("residual_stream", ("auto", "fp32")),
            ("kernels", ("auto", "off")),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"Setting '{name}' must be one of {', '.join(allowed)} (got '{getattr(self, name)}')."
                )

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}

    @classmethod
    def from_overrides(
        cls, overrides: typing.Mapping[str, typing.Any] | None = None, **base: typing.Any
    ) -> TrainConfig:
        """Build a config from a dict with camelCase or snake_case keys (the stack file's ``job`` object).

        Values are converted to the field's type; an unknown key raises ConfigError naming it.
        """
        values = dict(base)
        types = typing.get_type_hints(cls)
        for key, value in (overrides or {}).items():
            name = setting_name(key)
            if name not in types:
                raise ConfigError(
                    f"Unknown training setting '{key}'. Known settings: {', '.join(sorted(types))} "
                    "(camelCase or snake_case)."
                )
            values[name] = _coerce(name, types[name], value)
        return cls(**values)

    def to_dict(self) -> dict[str, typing.Any]:
        return dataclasses.asdict(self)


@functools.cache
def _float_fields() -> tuple[dataclasses.Field, ...]:
    hints = typing.get_type_hints(TrainConfig)
    return tuple(f for f in dataclasses.fields(TrainConfig) if hints[f.name] is float)


def setting_name(key: str) -> str:
    """The field a stack-file or command-line key names (camelCase, kebab-case or snake_case)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")


def _coerce(name: str, kind: type, value: typing.Any) -> typing.Any:
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered in ("1", "true", "yes", "on"):
                    return True
                if lowered in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if value in (0, 1):  # True and False included
                return bool(value)
            raise ValueError(value)
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"Setting '{name}' expects {kind.__name__}, got {value!r}.") from None


def parse_args(argv: typing.Sequence[str] | None = None) -> TrainConfig:
    """Parse ``--flag value`` pairs (flags are the field names, dashes or underscores) into a TrainConfig."""
    parser = argparse.ArgumentParser(
        prog="python -m training.train",
        description="GPT-style decoder LM training with PyTorch DDP.",
        argument_default=argparse.SUPPRESS,
    )
    types = typing.get_type_hints(TrainConfig)
    for name, doc in TrainConfig.field_docs().items():
        default = TrainConfig.__dataclass_fields__[name].default
        flags = dict.fromkeys((f"--{name.replace('_', '-')}", f"--{name}"))
        parser.add_argument(
            *flags,
            dest=name,
            metavar=types[name].__name__.upper(),
            help=f"{doc} (default: {default})".replace("%", "%%"),  # argparse formats help with %
        )
    parsed = vars(parser.parse_args(argv))
    return TrainConfig.from_overrides(parsed)
