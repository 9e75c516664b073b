"""The harness's answer to the mirror hosts a plan names (here.boot.mirrors, apt.archive), checked without booting:
a real http.server serves the site at the paths the plan's mirror URLs name, and this host's apt reads the archive
from it, checking the harness's signature as a node's apt checks its distribution's."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from here.boot import apt, mirrors

SETTINGS = {"GF_MIRRORS_PIP": "http://mirrors.cloud.aliyuncs.com/pypi/simple/",
            "GF_MIRRORS_APT": "http://mirrors.cloud.aliyuncs.com"}
PACKAGE = "Package: gf-mirror-test\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.invalid>\n" \
          "Filename: ./gf-mirror-test_1.0_all.deb\nSize: 4\nSHA256: {}\nDescription: test\n"


@contextlib.contextmanager
def served(root: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _status(url: str) -> int:
    result = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url], capture_output=True,
                            text=True, check=False)
    return int(result.stdout or 0)


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A one-package repository as apt.repository leaves it, laid out and signed as the harness serves it."""
    monkeypatch.setattr(apt, "CACHE", tmp_path / "cache")
    repo = tmp_path / "cache/apt/plain-test"
    repo.mkdir(parents=True)
    (repo / "gf-mirror-test_1.0_all.deb").write_bytes(b"deb!")
    (repo / "Packages").write_text(PACKAGE.format("0" * 64))
    return apt.archive(repo)


def test_the_plans_mirror_urls_are_answered_at_their_paths_and_only_they_without_the_stand_ins(tmp_path, archive):
    index = tmp_path / "wheelhouse/simple"
    (index / "torch").mkdir(parents=True)
    (index / "torch/torch-2.13.0-cp311-none-any.whl").write_bytes(b"w" * 10)
    assert mirrors.hosts(SETTINGS) == ("mirrors.cloud.aliyuncs.com",)
    for stand_in in (False, True):
        site = mirrors.site(tmp_path / f"run-{stand_in}", SETTINGS, index, archive, stand_in=stand_in)
        with served(site) as base:
            assert _status(f"{base}/pypi/simple/torch/torch-2.13.0-cp311-none-any.whl") == 200
            assert _status(f"{base}/debian/dists/{apt.SUITE}/InRelease") == 200
            assert _status(f"{base}/debian/pool/gf-mirror-test_1.0_all.deb") == 200
            assert _status(f"{base}/debian-security/dists/{apt.SUITE}-security/InRelease") == 200
            # pip.conf's stand-in for pypi.org, which only a harness that stands in for the internet serves
            assert _status(f"{base}/simple/torch/") == (200 if stand_in else 404)


def test_a_mirror_the_harness_cannot_answer_names_its_setting(tmp_path):
    with pytest.raises(mirrors.UnservableMirror, match="GF_MIRRORS_PIP=https://pypi.corp.example/simple"):
        mirrors.hosts({"GF_MIRRORS_PIP": "https://pypi.corp.example/simple"})
    with pytest.raises(mirrors.UnservableMirror, match="GF_MIRRORS_APT=http://mirror.corp:8080"):
        mirrors.hosts({"GF_MIRRORS_APT": "http://mirror.corp:8080"})


def _apt(tmp_path: Path, sources: str, trusted: Path) -> subprocess.CompletedProcess:
    """This host's apt, alone in tmp_path: the given sources, the given trusted keys, nothing of the host's."""
    state = tmp_path / "apt-state"
    (state / "lists/partial").mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(sources)
    options = [f"-oDir::State::Lists={state}/lists", f"-oDir::State::status={state}/status",
               f"-oDir::Cache={state}/cache", f"-oDir::Etc::SourceList={state}/sources.list",
               f"-oDir::Etc::SourceParts={state}/none", f"-oDir::Etc::TrustedParts={trusted}",
               f"-oDir::Etc::Trusted={trusted}/none.gpg", "-oDebug::NoLocking=true", "-oAcquire::Languages=none"]
    (state / "status").touch()
    update = subprocess.run(["apt-get", *options, "update"], capture_output=True, text=True, check=False)
    if update.returncode != 0:
        return update
    return subprocess.run(["apt-cache", *options, "policy", "gf-mirror-test"], capture_output=True, text=True,
                          check=False)


def test_apt_reads_the_archive_from_the_mirror_checking_the_harness_signature(tmp_path, archive):
    """The sources a node writes for a Debian image (gpufleet-lib.sh apt_install): the release, its updates and its
    security suite, from <mirror>/debian and <mirror>/debian-security."""
    site = mirrors.site(tmp_path / "run", SETTINGS, None, archive, stand_in=False)
    keys, none = tmp_path / "keys", tmp_path / "no-keys"
    keys.mkdir()
    none.mkdir()
    (keys / "gpufleet-boot-mirror.asc").write_bytes(apt.trusted_key())
    with served(site) as base:
        sources = (f"deb {base}/debian {apt.SUITE} main\ndeb {base}/debian {apt.SUITE}-updates main\n"
                   f"deb {base}/debian-security {apt.SUITE}-security main\n")
        result = _apt(tmp_path, sources, keys)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Candidate: 1.0" in result.stdout, result.stdout
        unsigned = _apt(tmp_path / "unsigned", sources, none)
        assert unsigned.returncode != 0 and "NO_PUBKEY" in unsigned.stdout + unsigned.stderr
