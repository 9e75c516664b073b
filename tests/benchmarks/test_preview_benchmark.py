"""The preview benchmark's generated stacks stay valid as the spec's rules grow (it is run on demand, not in CI)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fleet.stacks import spec_and_plan
from spec.stackfile import load_stack_file

_SPEC = importlib.util.spec_from_file_location(
    "preview_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "preview.py")
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


@pytest.mark.parametrize("nodes", bench.SIZES)
def test_benchmark_stacks_plan(tmp_path, nodes):
    _, plan = spec_and_plan(load_stack_file(bench.stack_file(tmp_path, nodes)))
    assert plan.scaling.nodes_max == nodes
