"""Terraform and terraform-provider-aws from a local filesystem mirror: found, initialised, and the schema cached.

Nothing here reaches a network: the CLI configuration installs the provider from the mirror only, and the provider's
schema is read once per provider version and kept under the cache directory.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from spec.errors import ToolchainMissing

PROVIDER_SOURCE = "registry.terraform.io/hashicorp/aws"
DEFAULT_MIRROR = Path("/opt/tf-plugins")
MIRROR_ENV, TERRAFORM_ENV, CACHE_ENV = "GPUFLEET_TF_MIRROR", "GPUFLEET_TERRAFORM", "GPUFLEET_TF_CACHE"
CLI_CONFIG = """provider_installation {{
  filesystem_mirror {{
    path    = "{mirror}"
    include = ["{source}"]
  }}
}}
"""


@dataclass(frozen=True)
class Toolchain:
    """The Terraform binary, the mirror holding the provider, and the provider version found there."""

    terraform: str
    mirror: Path
    provider_version: str

    def environment(self, workdir: Path) -> dict[str, str]:
        """Terraform's environment: the mirror-only CLI config, no update check, no AWS metadata look-up."""
        config = workdir / "cli.tfrc"
        if not config.exists():
            config.write_text(CLI_CONFIG.format(mirror=self.mirror, source=PROVIDER_SOURCE))
        keep = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "TF_"))}
        return {**keep, "TF_CLI_CONFIG_FILE": str(config), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1",
                "AWS_EC2_METADATA_DISABLED": "true", "TF_DATA_DIR": str(workdir / ".terraform")}


def _platform() -> str:
    machine = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}_{machine}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def find_toolchain(environ: dict[str, str] | None = None) -> Toolchain:
    """Terraform on PATH (or $GPUFLEET_TERRAFORM) and the newest AWS provider in the mirror ($GPUFLEET_TF_MIRROR)."""
    environ = os.environ if environ is None else environ
    terraform = environ.get(TERRAFORM_ENV) or shutil.which("terraform", path=environ.get("PATH"))
    if not terraform or not os.access(terraform, os.X_OK):
        raise ToolchainMissing("terraform is not installed (not on PATH, nor named by $GPUFLEET_TERRAFORM): install "
                               "Terraform >= 1.5 to validate a stack with the AWS provider")
    mirror = Path(environ.get(MIRROR_ENV, DEFAULT_MIRROR))
    provider_dir = mirror / PROVIDER_SOURCE
    binaries = provider_dir.glob(f"*/{_platform()}/terraform-provider-aws_*")
    versions = sorted({binary.parent.parent.name for binary in binaries}, key=_version_key)
    if not versions:
        raise ToolchainMissing(f"no terraform-provider-aws for {_platform()} in the filesystem mirror {mirror} "
                               f"(expected {provider_dir}/VERSION/{_platform()}/terraform-provider-aws_*): put the "
                               f"provider there, or name another mirror in ${MIRROR_ENV}")
    return Toolchain(terraform=terraform, mirror=mirror, provider_version=versions[-1])


def terraform(toolchain: Toolchain, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """One Terraform command in `workdir`, output captured, never interactive."""
    return subprocess.run([toolchain.terraform, f"-chdir={workdir}", *args], env=toolchain.environment(workdir),
                          capture_output=True, text=True, check=False)


def required_providers(toolchain: Toolchain) -> dict:
    """The `terraform` block pinning the provider to the mirror's version."""
    return {"required_providers": {"aws": {"source": "hashicorp/aws", "version": toolchain.provider_version}}}


def init(toolchain: Toolchain, workdir: Path) -> None:
    """`terraform init` against the mirror; the provider binary is linked, not copied."""
    result = terraform(toolchain, workdir, "init", "-input=false", "-no-color", "-backend=false")
    if result.returncode != 0:
        raise ToolchainMissing(f"terraform init could not install hashicorp/aws {toolchain.provider_version} from "
                               f"{toolchain.mirror}: {result.stderr.strip() or result.stdout.strip()}")


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpufleet" / "terraform"


def resource_schemas(toolchain: Toolchain, workdir: Path, cache: Path | None = None) -> dict[str, dict]:
    """The provider's resource schemas (`terraform providers schema -json`), cached per provider version.

    `workdir` must already be initialised; the schema is 13 MB and takes seconds to produce, so it is read once.
    """
    cached = (cache or cache_dir()) / f"aws-{toolchain.provider_version}-resources.json"
    if cached.exists():
        return json.loads(cached.read_text())
    result = terraform(toolchain, workdir, "providers", "schema", "-json")
    if result.returncode != 0:
        raise ToolchainMissing(f"terraform providers schema failed: {result.stderr.strip()}")
    schemas = json.loads(result.stdout)["provider_schemas"][PROVIDER_SOURCE]["resource_schemas"]
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    partial.write_text(json.dumps(schemas))
    partial.replace(cached)
    return schemas
