"""The kernels' one entry: each kernel is used only after its start-up self-test passes, and one that cannot load or
computes wrongly is left out with a warning, never stopping the job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from training import kernels
from training.model import Fused

CUDA = torch.cuda.is_available()
DEVICE = torch.device("cuda" if CUDA else "cpu")
needs_cuda = pytest.mark.skipif(not CUDA, reason="the kernels run on CUDA devices only")


def test_off_a_gpu_or_out_of_bf16_nothing_is_selected_and_nothing_warned():
    assert kernels.select(torch.device("cpu"), half=True, bias=False) == (Fused(), [])
    if CUDA:
        assert kernels.select(DEVICE, half=False, bias=False) == (Fused(), [])


def test_a_kernel_that_cannot_load_is_left_out_with_a_warning_naming_it():
    def missing():
        raise ImportError("libcublasLt.so.13: cannot open shared object file")

    warnings = []
    assert kernels._tried("fused MLP (cuBLASLt epilogues)", missing, warnings) is None
    assert warnings == ["warning: the fused MLP (cuBLASLt epilogues) is off: ImportError: libcublasLt.so.13: cannot "
                        "open shared object file; PyTorch's ops run instead"]


def test_the_loss_self_test_passes_the_kernel_and_fails_one_that_computes_wrongly(monkeypatch):
    pytest.importorskip("triton", reason="the fused loss is a Triton kernel; install the 'kernels' extra")
    from training.kernels import fused_loss  # on the CPU through Triton's interpreter (conftest.py)

    assert kernels._check_loss(DEVICE, fp8=False) is fused_loss.head_cross_entropy
    right = fused_loss.head_cross_entropy
    monkeypatch.setattr(fused_loss, "head_cross_entropy", lambda *args, **kw: right(*args, **kw) * 1.05)
    with pytest.raises(ValueError, match="differ from PyTorch's by up to 5.0%"):
        kernels._check_loss(DEVICE, fp8=False)


@needs_cuda
@pytest.mark.parametrize("bias", [False, True])
def test_on_this_gpu_every_kernel_passes(bias):
    fused, warnings = kernels.select(DEVICE, half=True, bias=bias)
    assert warnings == []
    fp8 = torch.cuda.get_device_capability() >= (8, 9)
    assert fused.names() == ["mlp", "loss", *(["fp8-head"] if fp8 else [])]


@needs_cuda
def test_a_broken_library_leaves_only_its_kernel_out(monkeypatch):
    from training.kernels import cublaslt

    def unsupported(*_args):
        raise RuntimeError("cublasLtMatmulAlgoGetHeuristic failed with cuBLAS status 15")

    monkeypatch.setattr(cublaslt, "linear_gelu", unsupported)
    state = torch.cuda.get_rng_state()
    fused, warnings = kernels.select(DEVICE, half=True, bias=False)
    assert fused.mlp is None and fused.head_loss is not None
    assert len(warnings) == 1 and "fused MLP" in warnings[0] and "status 15" in warnings[0]
    assert torch.equal(torch.cuda.get_rng_state(), state), "the self-tests leave the job's random streams alone"


@pytest.mark.skipif(CUDA, reason="this machine has a GPU: the lane would run")
def test_the_gpu_lane_refuses_a_machine_without_a_gpu_instead_of_skipping():
    lane = Path(__file__).resolve().parents[3] / "scripts/test-gpu"
    result = subprocess.run([lane], env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and "sees no CUDA device" in result.stderr
