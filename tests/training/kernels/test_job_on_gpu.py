"""The real job on a GPU with its kernels (scripts/test-gpu runs these): every kernel in use, one compiled graph for
uneven micro-batches, the same loss as PyTorch's ops, and the memory estimate near the measured peak."""

from __future__ import annotations

import pytest
import torch
from train_helpers import run_process, summary

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="runs the job on a CUDA device")

UNEVEN = ["--device", "cuda", "--compile", "on", "--seq-len", "64", "--steps", "4", "--global-batch", "7",
          "--micro-batch", "3", "--eval-sequences", "0"]  # one rank: micro-steps of 2, 2 and 3 sequences


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return {setting: summary(run_process([*UNEVEN, "--kernels", setting, "--run-dir",
                                          str(tmp_path_factory.mktemp(setting))]))
            for setting in ("auto", "off")}


def test_the_job_uses_every_kernel_this_gpu_passes(runs):
    fp8 = torch.cuda.get_device_capability() >= (8, 9)
    assert runs["auto"]["kernels"] == ["mlp", "loss", *(["fp8-head"] if fp8 else [])]
    assert runs["off"]["kernels"] == []


def test_uneven_micro_batches_share_one_compiled_graph(runs):
    for run in runs.values():
        assert run["micro_steps"] == 3 and run["compiled_graphs"] <= 2  # the forward, and its part after the loss


def test_the_kernels_give_pytorchs_loss(runs):
    assert runs["auto"]["final_loss"] == pytest.approx(runs["off"]["final_loss"], rel=1e-2)


def test_the_memory_estimate_is_within_3_percent_of_the_peak(runs):
    for run in runs.values():
        assert run["memory_estimate_bytes"] == pytest.approx(run["memory_peak_bytes"], rel=0.03)
