"""Each version of the job's code compiles into its own Inductor cache directory; a directory the user chose stays."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from train_helpers import REPO

from training.compile_cache import SOURCES, VARIABLE, digest, isolate


def test_a_change_to_any_source_moves_the_cache(tmp_path):
    sources = tmp_path / "training"
    shutil.copytree(SOURCES, sources, ignore=shutil.ignore_patterns("__pycache__"))
    before = isolate({}, sources)
    fused = sources / "kernels/fused_mlp.py"
    fused.write_text(fused.read_text().replace("grad_y.sum(0)", "grad_y.sum(0) * 1"))
    after = isolate({}, sources)
    assert before != after
    assert after.endswith(digest(sources)) and before.endswith(digest(SOURCES))


def test_the_same_sources_share_a_directory_and_a_chosen_one_is_kept():
    environ = {}
    assert isolate(environ) == isolate({}) == environ[VARIABLE]
    assert isolate({VARIABLE: "/data/inductor"}) == "/data/inductor"


def test_the_job_uses_its_versioned_directory(tmp_path):
    """The job sets the directory before PyTorch's own default gets fixed (importing torch._dynamo does that)."""
    code = (
        "import os, sys; from training import train; "
        f"train.main(['--model', 'tiny', '--seq-len', '16', '--device', 'cpu', '--steps', '1', '--run-dir', "
        f"'{tmp_path}', '--progress', 'false', '--checkpoint-every', '0']); "
        "print(os.environ['TORCHINDUCTOR_CACHE_DIR'], file=sys.stderr)"
    )
    environ = {k: v for k, v in os.environ.items() if k != VARIABLE}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=environ, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(f"gpufleet-inductor/{digest()}")
