"""The image's package mirror on the bridge: the packages a node installs with apt (NODE_PACKAGES), with what they
need beyond what the image already has, downloaded once by this host's apt from Debian's mirror and served as a flat
repository (`python -m http.server`). A cloud image's apt points at its cloud's mirror inside the VPC
(mirrors.cloud.aliyuncs.com, mirrors.tencentyun.com, the regional Ubuntu archive on AWS); the node's sources.list
here points at this one instead, so `apt-get update` and `apt-get install` run for real without a route out. Where
the plan names an archive mirror, the same packages are served laid out and signed as Debian's archive (`archive`)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from email.utils import formatdate
from pathlib import Path

from here.boot.rootfs import CACHE, MIRROR, SUITE, Image, tree

# What the node scripts install with apt on a plain image, and which script does.
NODE_PACKAGES = {
    "python3-venv": "gpufleet-lib.sh's store client venv, gpufleet-python's job venv",
}
PORT = 8080


def repository(image: Image, packages: tuple[str, ...] = tuple(NODE_PACKAGES)) -> Path:
    """CACHE/apt/<image>-<hash>: the .debs `packages` need on `image`, and their Packages index."""
    root = CACHE / "apt" / f"{image.key}-{hashlib.sha256(' '.join(sorted(packages)).encode()).hexdigest()[:12]}"
    if (root / "Packages").exists():
        return root
    image_root = tree(image)
    status = image_root / "var/lib/dpkg/status"
    work = root.with_suffix(".partial")
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("lists/partial", "archives/partial", "etc/sources.list.d", "etc/preferences.d"):
        (work / sub).mkdir(parents=True)
    (work / "etc/sources.list").write_text(f"deb {MIRROR} {SUITE} main\n")
    # This host's apt, resolving against the image's installed packages: it fetches exactly what the node would.
    options = [f"-oDir::State::status={status}", f"-oDir::State::Lists={work}/lists",
               f"-oDir::Cache::Archives={work}/archives", f"-oDir::Etc::SourceList={work}/etc/sources.list",
               f"-oDir::Etc::SourceParts={work}/etc/sources.list.d", f"-oDir::Etc::Preferences={work}/etc/none",
               f"-oDir::Etc::PreferencesParts={work}/etc/preferences.d", "-oAPT::Install-Recommends=false",
               "-oDebug::NoLocking=true",
               f"-oAPT::Key::GPGVCommand={image_root}/usr/bin/gpgv"]  # the image's: a host may have no gpgv
    with open(work / "apt.log", "w") as log:
        for args in (["update", "-q"], ["install", "-yq", "--download-only", *packages]):
            subprocess.run(["apt-get", *options, *args], check=True, stdout=log, stderr=subprocess.STDOUT)
    pool = work / "repo"
    pool.mkdir()
    for deb in (work / "archives").glob("*.deb"):
        deb.rename(pool / deb.name)
    index = subprocess.run(["dpkg-scanpackages", "--multiversion", ".", "/dev/null"], cwd=pool, check=True,
                           capture_output=True).stdout
    (pool / "Packages").write_bytes(index)
    pool.rename(root)
    shutil.rmtree(work)
    return root


def sources_list(address: str) -> bytes:
    return (f"# gpufleet boot harness (here/boot/apt.py): the image's packages from the mirror on the bridge\n"
            f"deb [trusted=yes] http://{address}:{PORT} ./\n").encode()


def serve_command(repo: Path, address: str) -> list[str]:
    return [sys.executable, "-m", "http.server", str(PORT), "--bind", address, "--directory", str(repo)]


# The suites a node's sources name when it reads Debian's archive from a mirror (gpufleet-lib.sh apt_mirror_sources):
# the packages are in the release's own suite; its updates and security suites are there, empty.
ARCHIVE_SUITES = {"debian": (SUITE, f"{SUITE}-updates"), "debian-security": (f"{SUITE}-security",)}
KEY_NAME = "gpufleet boot harness mirror <mirror@gpufleet.invalid>"


def _gpg(home: Path, *args: str) -> str:
    """gpg on the harness's own keyring; the agent it starts for the secret key is ended with it."""
    try:
        return subprocess.run(["gpg", "--homedir", str(home), "--batch", *args], check=True, capture_output=True,
                              text=True).stdout
    finally:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], check=False, capture_output=True)


def signing_key() -> tuple[Path, str]:
    """(gpg home, fingerprint) of the key the harness signs its archive with, made once. A node trusts it as a cloud
    image trusts its distribution's key (trusted_key), so apt checks the mirror's signatures for real."""
    home = CACHE / "apt" / "gpg"
    if not (home / "fingerprint").exists():
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True, mode=0o700)
        _gpg(home, "--passphrase", "", "--quick-generate-key", KEY_NAME, "ed25519", "sign", "never")
        listing = _gpg(home, "--with-colons", "--list-secret-keys")
        (home / "fingerprint").write_text(next(line.split(":")[9] for line in listing.splitlines()
                                               if line.startswith("fpr:")))
    return home, (home / "fingerprint").read_text()


def trusted_key() -> bytes:
    """The signing key's public half, armored, as apt reads it from /etc/apt/trusted.gpg.d/*.asc."""
    home, fingerprint = signing_key()
    return _gpg(home, "--armor", "--export", fingerprint).encode()


def _release(suite: str, packages: bytes) -> str:
    return (f"Origin: gpufleet-boot\nLabel: gpufleet-boot\nSuite: {suite}\nCodename: {suite}\n"
            f"Date: {formatdate(usegmt=True)}\nArchitectures: amd64\nComponents: main\nSHA256:\n"
            f" {hashlib.sha256(packages).hexdigest()} {len(packages)} main/binary-amd64/Packages\n")


def archive(repo: Path) -> Path:
    """The repository laid out as Debian's archive is (ARCHIVE_SUITES: dists/<suite>/main/binary-amd64/Packages and a
    signed InRelease, the .debs under debian/pool/), so a node whose sources name an archive mirror reads it as it
    would the cloud's: <this>/debian and <this>/debian-security."""
    root = repo.with_name(f"{repo.name}-archive")
    if (root / ".complete").exists():
        return root
    home, fingerprint = signing_key()
    work = root.with_name(f"{root.name}.partial")
    shutil.rmtree(work, ignore_errors=True)
    packages = (repo / "Packages").read_bytes().replace(b"\nFilename: ./", b"\nFilename: pool/")
    for path, suites in ARCHIVE_SUITES.items():
        for suite in suites:
            index = packages if suite == SUITE else b""
            dists = work / path / "dists" / suite
            (dists / "main/binary-amd64").mkdir(parents=True)
            (dists / "main/binary-amd64/Packages").write_bytes(index)
            (dists / "Release").write_text(_release(suite, index))
            _gpg(home, "--yes", "--local-user", fingerprint, "--clearsign", "--output", str(dists / "InRelease"),
                 str(dists / "Release"))
    (work / "debian/pool").symlink_to(repo)
    (work / ".complete").touch()
    shutil.rmtree(root, ignore_errors=True)
    work.rename(root)
    return root
