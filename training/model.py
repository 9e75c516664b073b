"""GPT-2-style decoder-only language model.

Pre-norm transformer blocks, fused QKV projection, causal attention through
``F.scaled_dot_product_attention`` (FlashAttention kernels on CUDA), GELU MLP,
and an output head tied to the token embedding. Written for throughput: no
Python-side work per token, so ``torch.compile`` sees one clean graph. On CUDA
the residual stream can stay in bf16 (as llm.c keeps it), and fused kernels may replace
the MLP and the output layer with its loss (``Fused``: ``training.kernels`` picks them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from training.config import ModelSize, TrainConfig


@dataclass(frozen=True)
class Fused:
    """Fused replacements for parts of the model; None keeps PyTorch's ops (``training.kernels.select`` fills it)."""

    mlp: Callable[[torch.Tensor, nn.Linear, nn.Linear], torch.Tensor] | None = None
    """(x, up, down) -> down(gelu(up(x))), tanh GELU."""
    head_loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor] | None = None
    """(hidden [tokens, width], head weight [vocab, width], targets [tokens], fp8) -> mean cross-entropy."""
    fp8_head: bool = False
    """head_loss runs the output layer's products in FP8."""

    def names(self) -> list[str]:
        """The fused kernels in use, for the start-up line and the summary."""
        return [name for name, used in (("mlp", self.mlp), ("loss", self.head_loss), ("fp8-head", self.fp8_head))
                if used]

    def keep(self, mlp: bool, head_loss: bool, fp8_head: bool) -> Fused:
        """These kernels, less the ones not kept (the FP8 head goes with the loss)."""
        head = self.head_loss if head_loss else None
        return Fused(self.mlp if mlp else None, head, self.fp8_head and fp8_head and head is not None)


class CausalSelfAttention(nn.Module):
    def __init__(self, size: ModelSize, bias: bool, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_head = size.n_head
        self.dropout = dropout
        self.qkv = nn.Linear(size.n_embd, 3 * size.n_embd, bias=bias)
        self.proj = nn.Linear(size.n_embd, size.n_embd, bias=bias)
        self.proj.residual_out = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.n_head, width // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(batch, seq, width))


class MLP(nn.Module):
    def __init__(self, size: ModelSize, bias: bool, fused: Callable | None = None) -> None:
        """``fused``: Fused.mlp, or None for PyTorch's ops."""
        super().__init__()
        self.fused = fused
        self.up = nn.Linear(size.n_embd, 4 * size.n_embd, bias=bias)
        self.down = nn.Linear(4 * size.n_embd, size.n_embd, bias=bias)
        self.down.residual_out = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused is not None:
            return self.fused(x, self.up, self.down)
        return self.down(F.gelu(self.up(x), approximate="tanh"))


def _dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """F.dropout where it is on (a setting, so torch.compile sees no dropout at all when it is 0)."""
    return F.dropout(x, p, training) if p else x


class Block(nn.Module):
    def __init__(self, size: ModelSize, bias: bool, fused_mlp: Callable | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout
        self.ln1 = nn.LayerNorm(size.n_embd, bias=bias)
        self.attn = CausalSelfAttention(size, bias, dropout)
        self.ln2 = nn.LayerNorm(size.n_embd, bias=bias)
        self.mlp = MLP(size, bias, fused_mlp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + _dropout(self.attn(self.ln1(x)), self.dropout, self.training)
        return x + _dropout(self.mlp(self.ln2(x)), self.dropout, self.training)


class GPT(nn.Module):
    def __init__(
        self,
        size: ModelSize,
        seq_len: int,
        activation_checkpointing: bool = False,
        residual_dtype: torch.dtype | None = None,
        fused: Fused | None = None,
        bias: bool = False,
        dropout: float = 0.0,
    ) -> None:
        """``residual_dtype``: cast the embeddings to it so the residual stream stays in it (None keeps the
        embedding's fp32); ``fused``: kernels that replace the MLP and the output layer with its loss (none by
        default); ``bias``: biases in the linear layers and LayerNorms, as
        GPT-2 had (nanoGPT trains without them, and so do we by default); ``dropout``: on the attention weights, the
        embeddings and the residual branches."""
        super().__init__()
        self.size = size
        self.seq_len = seq_len
        self.activation_checkpointing = activation_checkpointing
        self.residual_dtype = residual_dtype
        self.fused = fused or Fused()
        self.dropout = dropout
        self.wte = nn.Embedding(size.vocab_size, size.n_embd)
        self.wpe = nn.Embedding(seq_len, size.n_embd)
        self.blocks = nn.ModuleList(Block(size, bias, self.fused.mlp, dropout) for _ in range(size.n_layer))
        self.ln_f = nn.LayerNorm(size.n_embd, bias=bias)
        self.head = nn.Linear(size.n_embd, size.vocab_size, bias=False)
        self.head.weight = self.wte.weight
        self.apply(self._init_weights)

    @classmethod
    def from_config(cls, cfg: TrainConfig, half: bool, fused: Fused | None = None) -> GPT:
        """The job's model for these settings: the residual stream in bf16 under bf16 autocast (unless
        residual_stream is 'fp32'), with the fused kernels given."""
        return cls(
            cfg.size,
            cfg.seq_len,
            cfg.activation_checkpointing,
            residual_dtype=torch.bfloat16 if half and cfg.residual_stream == "auto" else None,
            fused=fused,
            bias=cfg.bias,
            dropout=cfg.dropout,
        )

    def _init_weights(self, module: nn.Module) -> None:
        # GPT-2 init: N(0, 0.02), residual output projections scaled by 1/sqrt(2 * n_layer)
        # so the residual stream's variance does not grow with depth.
        if isinstance(module, nn.Linear):
            std = 0.02 / math.sqrt(2 * self.size.n_layer) if getattr(module, "residual_out", False) else 0.02
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy of ``targets`` given ``idx`` (both [batch, seq])."""
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = _dropout(self.wte(idx) + self.wpe(positions), self.dropout, self.training)
        if self.residual_dtype is not None:
            x = x.to(self.residual_dtype)
        for block in self.blocks:
            if self.activation_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        x = self.ln_f(x)
        if self.fused.head_loss is not None:
            return self.fused.head_loss(x.view(-1, x.shape[-1]), self.head.weight, targets.reshape(-1),
                                        self.fused.fp8_head)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    def num_params(self) -> int:
        """Parameters counted once (the tied head is the embedding)."""
        return sum(p.numel() for p in self.parameters())

    def flops_per_token(self) -> int:
        """Training FLOPs per token: 6 per matmul weight (excluding the position table, a lookup)
        plus causal attention's score and value products, 12 * layers * width * seq_len (PaLM's estimate)."""
        matmul_params = self.num_params() - self.wpe.weight.numel()
        return 6 * matmul_params + 12 * self.size.n_layer * self.size.n_embd * self.seq_len

    def param_groups(self, weight_decay: float) -> list[dict]:
        """Decay matrices and embeddings; leave biases and LayerNorm gains undecayed."""
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def select_attention_backend(name: str) -> None:
    """Restrict scaled_dot_product_attention to one CUDA kernel family ('auto' keeps PyTorch's ranking)."""
    if name == "auto":
        return
    torch.backends.cuda.enable_flash_sdp(name == "flash")
    torch.backends.cuda.enable_cudnn_sdp(name == "cudnn")
    torch.backends.cuda.enable_mem_efficient_sdp(name == "efficient")
