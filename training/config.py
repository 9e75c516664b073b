"""Typed settings for the training job.

One dataclass, ``TrainConfig``, is the single source of truth: the command line (``--steps 40 --model tiny``) and
the cluster's stack-file ``job`` object both map onto its fields, and each field's metadata (``settings()``) holds its
doc, its allowed values and its bounds, which ``TrainConfig.validate`` checks here and the stack's typed ``job``
model (spec/jobs.py) is generated from, so a setting or a limit cannot exist in one place and not the other.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import operator
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


def _setting(text: str, default: typing.Any, choices: tuple[str, ...] = (), **bounds: float) -> typing.Any:
    """A field with its doc, the values it allows (none: any of its type) and its bounds (``ge``, ``gt``, ``le``,
    ``lt``: at least, greater than, at most, below)."""
    return field(default=default, metadata={"doc": text, "choices": choices, "bounds": bounds})


@dataclass
class TrainConfig:
    """Every setting of a training run, with its default."""

    model: str = _setting(
        f"Named model size: one of {', '.join(MODEL_SIZES)}.", default="gpt2", choices=tuple(MODEL_SIZES)
    )
    seq_len: int = _setting("Tokens per sequence (context length).", default=1024, ge=1)
    bias: bool = _setting(
        "Biases in the linear layers and LayerNorms, as GPT-2 had. Off by default, as in nanoGPT's training setup "
        "and most models since: the same loss curve, 2-3% faster on an H200. A checkpoint resumes only with the "
        "setting it was written with.",
        default=False,
    )
    dropout: float = _setting(
        "Dropout on the attention weights, the embeddings and each block's residual branches (0 for pre-training, "
        "as nanoGPT; 0.1 is usual for fine-tuning). Each rank draws its own masks, so runs at different world "
        "sizes differ where it is on; a resume at any world size continues each rank's random stream.",
        default=0.0,
        ge=0,
        lt=1,
    )
    global_batch: int = _setting(
        "Sequences per optimizer step across all ranks; kept fixed when the world size changes.",
        default=512,
        ge=1,
    )
    micro_batch: int = _setting(
        "The most sequences per forward/backward pass on one rank; 0 picks it at start-up from micro-steps "
        "measured at the rows they will train on: the rank's share up to 65,536 tokens if that fills at most 90% "
        "of the GPU, else the largest power of two below it that does (on the CPU, the share up to 65,536 tokens). "
        "The global batch is exact whatever it is: shares and micro-batches may be uneven.",
        default=0,
        ge=0,
    )
    steps: int = _setting("Optimizer steps to train for (total, counting steps before a resume).", default=1000, ge=1)
    lr: float = _setting("Peak learning rate of AdamW.", default=6e-4, gt=0)
    min_lr_ratio: float = _setting("Cosine schedule floor as a fraction of lr.", default=0.1, ge=0, le=1)
    warmup_steps: int = _setting("Linear learning-rate warm-up steps.", default=100, ge=0)
    weight_decay: float = _setting("AdamW weight decay on matrices (not on biases, norms).", default=0.1, ge=0)
    beta1: float = _setting("AdamW beta1.", default=0.9, ge=0, lt=1)
    beta2: float = _setting("AdamW beta2.", default=0.95, ge=0, lt=1)
    grad_clip: float = _setting("Clip the global gradient norm to this; 0 disables clipping.", default=1.0, ge=0)
    seed: int = _setting("Seed for initialisation and the synthetic data stream.", default=1337)
    data: str = _setting(
        "'synthetic' for the built-in learnable token stream, or local token files: one file, a directory of shards "
        "(every *.bin in it, in name order) or a glob pattern; raw tokens of 'data_dtype', or shards with llm.c's "
        "256-int32 header (their own dtype).",
        default="synthetic",
    )
    data_dtype: str = _setting(
        "Token type of raw token files: 'uint16' (GPT-2's vocabulary) or 'uint32'.",
        default="uint16",
        choices=("uint16", "uint32"),
    )
    eval_every: int = _setting("Held-out validation loss every N steps and after the last; 0 never.", default=100, ge=0)
    eval_sequences: int = _setting(
        "Sequences in the held-out set: the last ones of the token files, never trained on (for 'synthetic', a "
        "stream of its own); 0 holds none out and turns validation off.",
        default=64,
        ge=0,
    )
    sequence_log: str = _setting(
        "Directory where each rank appends the global indices of the sequences it trains on, one JSON line per "
        "step (rank-<R>.jsonl): an audit that a resume neither skips nor repeats data. Empty: no log.",
        default="",
    )
    run_dir: str = _setting("Directory for metrics, TensorBoard events and summary.json.", default="runs/default")
    checkpoint_dir: str = _setting(
        "Directory for checkpoints, on each node's own disk (every node keeps a copy; shared storage also works); "
        "empty means <run_dir>/checkpoints.",
        default="",
    )
    checkpoint_every: int = _setting(
        "Write a checkpoint every N steps; 0 only on signals and at the end.", default=200, ge=0
    )
    keep_checkpoints: int = _setting("Keep the last K checkpoints.", default=3, ge=1)
    keep_dir: str = _setting(
        "Directory in host memory that outlives this worker (a node's tmpfs): each rank keeps its last finished "
        "step's state there, so a job re-formed after a node is lost goes on from a survivor's memory instead of the "
        "last checkpoint (training.last_step, training.recovery). Empty: off.",
        default="",
    )
    peer_timeout: float = _setting(
        "Seconds without a heartbeat from a peer rank (or an answer from the job's store) after which this worker "
        "ends, so the agents re-form the job without a lost or cut-off node at once instead of after the collectives' "
        "timeout (training.watchdog); 0: off.",
        default=6.0,
        ge=0,
    )
    checkpoint_at_end: bool = _setting("Write a checkpoint after the last step.", default=True)
    resume: bool = _setting(
        "Resume from the newest valid checkpoint any node holds in its checkpoint_dir, when one exists.", default=True
    )
    log_every: int = _setting("Read the loss back from the device and log metrics every N steps.", default=10, ge=1)
    compile: str = _setting(
        "torch.compile: 'auto' (on for CUDA, off for CPU), 'on' or 'off'.",
        default="auto",
        choices=("auto", "on", "off"),
    )
    compile_mode: str = _setting(
        "torch.compile mode: 'default' or 'max-autotune-no-cudagraphs' (slower start, tuned matmuls).",
        default="default",
        choices=("default", "max-autotune-no-cudagraphs"),
    )
    activation_checkpointing: bool = _setting(
        "Recompute each block's activations in backward to save memory.", default=False
    )
    sdpa_backend: str = _setting(
        "Attention kernel: 'auto' (PyTorch's choice), 'flash', 'cudnn' or 'efficient'.",
        default="auto",
        choices=("auto", "flash", "cudnn", "efficient"),
    )
    dtype: str = _setting(
        "Autocast dtype: 'auto' (bf16 on CUDA, fp32 on CPU), 'bf16', 'fp32' or 'fp64' (the whole model in float64, "
        "on the CPU: for checks that two runs compute the same numbers).",
        default="auto",
        choices=("auto", "bf16", "fp32", "fp64"),
    )
    residual_stream: str = _setting(
        "Precision of the residual stream between blocks: 'auto' keeps it in the autocast dtype (bf16 on GPUs, "
        "as llm.c does; 5% faster on an H200) or 'fp32' (nanoGPT's choice: fp32 embeddings and sums).",
        default="auto",
        choices=("auto", "fp32"),
    )
    kernels: str = _setting(
        "The job's fused GPU kernels (training/kernels: the MLP with GELU inside its cuBLASLt matmuls, the output "
        "layer and loss as one Triton step, its matmuls in FP8 on GPUs with FP8 tensor cores): 'auto' uses each that "
        "passes its start-up self-test on this GPU in bf16 (a warning names any that does not: PyTorch's ops run "
        "instead), 'off' runs PyTorch's ops and leaves them out of the nodes' code bundle.",
        default="auto",
        choices=("auto", "off"),
    )
    device: str = _setting(
        "'auto' (CUDA if available, else CPU), 'cuda' or 'cpu'.", default="auto", choices=("auto", "cuda", "cpu")
    )
    bucket_cap_mb: int = _setting("DDP gradient bucket size in MiB.", default=100, ge=1)
    peak_tflops: float = _setting(
        "Peak dense bf16 TFLOP/s of one device for MFU; 0 looks the device name up in a built-in table.",
        default=0.0,
        ge=0,
    )
    memory_limit_gb: float = _setting(
        "Device memory budget for the pre-flight check; 0 uses free CUDA memory (and skips the check on CPU).",
        default=0.0,
        ge=0,
    )
    stop_after_steps: int = _setting(
        "Exit cleanly (with a checkpoint) after this many steps of this process; 0 means run to 'steps'. "
        "For tests and drills of interrupted runs.",
        default=0,
        ge=0,
    )
    timing_warmup_steps: int = _setting(
        "Steps left out of the summary's throughput figures (compilation, allocator warm-up).", default=1, ge=0
    )
    progress: bool = _setting("Show a progress bar on rank 0 when stdout is a terminal.", default=True)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def size(self) -> ModelSize:
        return MODEL_SIZES[self.model]

    def resolved_checkpoint_dir(self) -> str:
        return self.checkpoint_dir or f"{self.run_dir.rstrip('/')}/checkpoints"

    def validate(self) -> None:
        """Check settings that do not depend on the world size, against each field's allowed values and bounds."""
        for setting in settings():
            value = getattr(self, setting.name)
            if setting.kind is float and not math.isfinite(value):
                raise ConfigError(f"Setting '{setting.name}' must be a finite number (got {value}).")
            if setting.choices and value not in setting.choices:
                raise ConfigError(
                    f"Setting '{setting.name}' must be one of {', '.join(setting.choices)} (got '{value}')."
                )
            if not all(_BOUNDS[bound](value, limit) for bound, limit in setting.bounds.items()):
                raise ConfigError(f"Setting '{setting.name}' must be {setting.rule} (got {value}).")
        if self.size.n_embd % self.size.n_head:
            raise ConfigError(f"Model '{self.model}': n_embd must be divisible by n_head.")

    @classmethod
    def from_overrides(
        cls, overrides: typing.Mapping[str, typing.Any] | None = None, **base: typing.Any
    ) -> TrainConfig:
        """Build a config from settings named in any spelling ``setting_name`` reads (the command line's).

        Values are converted to the field's type; an unknown key raises ConfigError naming it.
        """
        values = dict(base)
        kinds = {setting.name: setting.kind for setting in settings()}
        for key, value in (overrides or {}).items():
            name = setting_name(key)
            if name not in kinds:
                raise ConfigError(
                    f"Unknown training setting '{key}'. Known settings: {', '.join(sorted(kinds))} "
                    "(camelCase or snake_case)."
                )
            values[name] = _coerce(name, kinds[name], value)
        return cls(**values)

    def to_dict(self) -> dict[str, typing.Any]:
        return dataclasses.asdict(self)


_BOUNDS = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt}


@dataclass(frozen=True)
class Setting:
    """One field of TrainConfig as its metadata states it: what the command line, the stack's ``job`` model and
    ``TrainConfig.validate`` all read."""

    name: str
    kind: type
    default: typing.Any
    doc: str
    choices: tuple[str, ...]
    """The values it allows; empty: any of its kind."""
    bounds: typing.Mapping[str, float]
    """``ge``, ``gt``, ``le``, ``lt`` (as pydantic's Field names them): at least, greater than, at most, below."""

    @property
    def rule(self) -> str:
        """The bounds in words: 'at least 1', 'between 0 and 1', 'at least 0 and below 1'."""
        if self.bounds.keys() == {"ge", "le"}:
            return f"between {self.bounds['ge']} and {self.bounds['le']}"
        words = {"ge": "at least", "gt": "greater than", "le": "at most", "lt": "below"}
        return " and ".join(f"{words[bound]} {limit}" for bound, limit in self.bounds.items())


@functools.cache
def settings() -> tuple[Setting, ...]:
    """Every field of TrainConfig, in order."""
    kinds = typing.get_type_hints(TrainConfig)
    return tuple(
        Setting(f.name, kinds[f.name], f.default, f.metadata["doc"], f.metadata["choices"], f.metadata["bounds"])
        for f in dataclasses.fields(TrainConfig)
    )


def most_ranks(global_batch: int) -> int:
    """The most ranks a step of ``global_batch`` sequences can run on: every rank needs at least one sequence
    (training.batching splits a step by it; the stack's checks hold a cluster's largest world size to it)."""
    return global_batch


def setting_name(key: str) -> str:
    """The field a stack-file or command-line key names (camelCase, kebab-case or snake_case): the one place a
    spelling is read."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")


def flag(name: str) -> str:
    """The command-line flag of the field ``name`` (``--seq-len``), as --help shows it and the nodes' command has it."""
    return f"--{name.replace('_', '-')}"


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
    for setting in settings():
        parser.add_argument(
            *dict.fromkeys((flag(setting.name), f"--{setting.name}")),
            dest=setting.name,
            metavar=setting.kind.__name__.upper(),
            help=f"{setting.doc} (default: {setting.default})".replace("%", "%%"),  # argparse formats help with %
        )
    parsed = vars(parser.parse_args(argv))
    return TrainConfig.from_overrides(parsed)
