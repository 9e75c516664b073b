"""Every shipped stack previewed once per test session, to break one resource at a time."""

from __future__ import annotations

import copy

import pytest
from policy_helpers import STACKS

from fleet.preview import run_program
from spec.stackfile import load_stack_file


@pytest.fixture(scope="session")
def previews() -> dict[str, list[dict]]:
    """Recorded resources per shipped stack name."""
    result = {}
    for path in STACKS:
        stack = load_stack_file(path)
        result[stack.name] = run_program(stack).resources
    return result


@pytest.fixture
def stack_of(previews):
    """A deep copy of one shipped stack's resources, safe to break."""
    return lambda name: copy.deepcopy(previews[name])
