"""Shared by the realizer tests of every cloud: load a shipped stack exactly as the tools do."""

from __future__ import annotations

from pathlib import Path

from components.stackfile import load_stack_file
from fleet.preview import run_program
from fleet.stacks import spec_and_plan


def preview_stack(path: Path):
    """A shipped stack as the tests see it: its spec, its plan, and the program's recorded resources and outputs."""
    stack_file = load_stack_file(path)
    spec, plan = spec_and_plan(stack_file)
    return spec, plan, run_program(stack_file)
