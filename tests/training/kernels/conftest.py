"""The kernel tests share the training tests' helpers (tests/training/train_helpers.py), and without a GPU run the
Triton kernels in Triton's interpreter: TRITON_INTERPRET is read when Triton is first imported, which importing
torch._dynamo (train_helpers does) already does, so it is set here, before any test module is imported."""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
