"""scripts/requirements_met.py, which scripts/setup asks before it runs pip: a package missing anywhere in the tree
of requirements, or at a version that does not satisfy them, is found; an installed tree passes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "requirements_met.py"
spec = importlib.util.spec_from_file_location("requirements_met", SCRIPT)
requirements_met = importlib.util.module_from_spec(spec)
spec.loader.exec_module(requirements_met)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """dist(name, version, *requires): a distribution's metadata on sys.path, as pip leaves it."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def dist(name: str, version: str, *requires: str) -> None:
        info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}", *(f"Requires-Dist: {r}" for r in requires)]
        (info / "METADATA").write_text("\n".join(lines) + "\n")

    return dist


def test_a_package_missing_deep_in_the_tree_is_found(installed):
    installed("gf-top", "1.0", "gf-middle>=2")
    installed("gf-middle", "2.1", "gf-leaf", 'gf-only-with-extra; extra == "x"')
    assert requirements_met.first_missing([Requirement("gf-top")]) == "gf-leaf"
    installed("gf-leaf", "0.1")
    assert requirements_met.first_missing([Requirement("gf-top")]) is None, "an extra nobody asked for is not needed"
    assert requirements_met.first_missing([Requirement("gf-middle[x]")]) == 'gf-only-with-extra; extra == "x"'


def test_a_version_that_does_not_satisfy_is_found(installed):
    installed("gf-top", "1.0", "gf-middle>=3")
    installed("gf-middle", "2.1")
    assert requirements_met.first_missing([Requirement("gf-top")]) == "gf-middle>=3 (installed: 2.1)"


def test_this_virtualenv_holds_what_scripts_setup_installs():
    """scripts/setup's extras, checked the way setup checks them (exit 0, nothing printed)."""
    extras = next(line.split("=", 1)[1] for line in (ROOT / "scripts/setup").read_text().splitlines()
                  if line.startswith("EXTRAS="))
    done = subprocess.run([sys.executable, str(SCRIPT), extras], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    assert "kernels" in extras.split(","), "Triton: the fused-loss tests run in its CPU interpreter"
