"""Which files the bundle takes, on a made-up checkout: every file its sources name, never a bytecode cache, and the
job's kernels unless they are left out (then nothing else is)."""

from __future__ import annotations

import pytest

from plan import bundle

TREE = {"training/train.py": b"train", "training/__pycache__/train.cpython-311.pyc": b"cache",
        "training/kernels/loss.py": b"kernel", "training/kernels/__pycache__/loss.cpython-311.pyc": b"cache",
        "cloud-init/bin/gpufleet-node": b"node", "monitoring/prometheus.yml": b"scrape", "README.md": b"not a source"}


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    for name, data in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    monkeypatch.setattr(bundle, "PROJECT_ROOT", tmp_path)
    return tmp_path


def test_every_source_but_caches_and_the_kernels_by_default(checkout):
    assert bundle.source_files() == {"cloud-init/bin/gpufleet-node": b"node", "monitoring/prometheus.yml": b"scrape",
                                     "training/kernels/loss.py": b"kernel", "training/train.py": b"train"}


def test_without_the_kernels_only_the_kernels_are_left_out(checkout):
    assert bundle.source_files(kernels=False) == {"cloud-init/bin/gpufleet-node": b"node",
                                                  "monitoring/prometheus.yml": b"scrape",
                                                  "training/train.py": b"train"}
