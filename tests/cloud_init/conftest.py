"""Puts the repository and this folder on sys.path so the tests import components.bootstrap and the case list."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE.parents[1], HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from components.bootstrap import install_files, render_user_data  # noqa: E402


@pytest.fixture
def node_root(tmp_path):
    """install(node) -> (root, entry): the node's user-data files written under a fresh node root."""

    def install(node):
        root = tmp_path / "node"
        return root, install_files(render_user_data(node), root)

    return install
