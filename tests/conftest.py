"""Fixtures shared by every test folder: write stack files the way users do, and load them as the tools do."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

AWS_P5 = {
    "job": {"microBatch": 16, "globalBatch": 1024},
    "cloud": "aws",
    "zone": "us-east-1a",
    "instanceType": "p5.48xlarge",
    "nodes": {"min": 2, "desired": 4, "max": 8},
    "market": {"onDemandBase": 2, "spotPercent": 50},
}


@pytest.fixture
def aws_cluster() -> dict:
    """A valid AWS cluster object to break one field at a time."""
    return copy.deepcopy(AWS_P5)


@pytest.fixture
def write_stack(tmp_path):
    """Write `config: {gpufleet:cluster: ...}` (plus provider keys) to a stack file and return its path."""

    def write(cluster, region: str | None = "us-east-1", name: str = "test", extra: dict | None = None) -> Path:
        config = {"gpufleet:cluster": cluster, **(extra or {})}
        if region is not None:
            config["aws:region"] = region
        path = tmp_path / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
        return path

    return write


def pytest_sessionstart(session) -> None:
    """Every session starts from cold caches of the project's own functions (functools.cache: plans, catalogs, the
    bundle). A session run in a forked process would otherwise read what its parent computed with other code: the
    mutation pass (mutmut) forks one session per mutant from a process that already ran every test unmutated."""
    for module in list(sys.modules.values()):
        path = Path(getattr(module, "__file__", None) or "/")
        if not path.is_relative_to(ROOT) or "site-packages" in path.parts:
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
