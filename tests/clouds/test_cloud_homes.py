"""One home per cloud (docs/design.md#one-home-per-cloud): a grep over the project's own files finds a cloud's name,
as a string or a provider namespace ("aws", "aws:region", 'alicloud:ecs/...'), only in that cloud's homes, the
registry, the boot harness and the metadata emulator's trees. Everything else reads the registry."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from clouds import CLOUDS

ROOT = Path(__file__).resolve().parents[2]
# The product's code: what a stack runs through, and what its nodes run.
PRODUCT = ("__main__.py", "spec/", "plan/", "clouds/", "components/", "here/", "fleet/", "policy/", "cloud-init/",
           "training/")
# Where any cloud's name may be spelt: the registry, the stack file's vocabulary (each cloud's name and region key,
# below the profiles: spec/clouds.py), the boot harness, which emulates each cloud's hypervisor,
# datasource and store for the boot tests, and the metadata emulator's trees of each cloud's service (those clouds'
# stand-ins, not readers of the plan; the cloud's facts they answer by come from its profile).
SHARED = ("clouds/__init__.py", "spec/clouds.py", "here/boot/", "here/metadata/trees.py")
# The clouds whose names are searched for: those with resources of their own. `local` is an ordinary word (the local
# zone, a default stack, node.env's GF_LOCAL), so its name is not searched for.
NAMED = sorted(name for name, cloud in CLOUDS.items() if cloud.pulumi_package)


def homes(cloud: str) -> tuple[str, ...]:
    """The five places one cloud's name belongs: profile, catalog, realizer package, policy reader, node adapter."""
    return (f"clouds/{cloud}.py", f"plan/catalog/{cloud}.yaml", f"components/{cloud}/",
            f"policy/clouds/{cloud}.py", f"cloud-init/clouds/{cloud}.sh")


def spelt(name: str) -> re.Pattern[str]:
    """The name as a quoted string, the start of a quoted provider key or type token, or a shell test or case arm on
    it (`= aws ]`, `aws)`)."""
    word = re.escape(name)
    return re.compile(rf"""["']{word}["':]|=\s*{word}\b|^\s*(?:[\w*-]+\|)*{word}\)""")


def project_files() -> list[str]:
    """Tracked files and new ones git would add (so a file not yet committed is searched too)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True)
    if listed.returncode != 0 or "clouds/__init__.py" not in listed.stdout.split("\n"):
        pytest.skip(f"{ROOT} is not a git checkout of the project: {listed.stderr.strip()}")
    return [path for path in listed.stdout.splitlines() if path.startswith(PRODUCT) and (ROOT / path).is_file()]


def strays(cloud: str) -> list[str]:
    """`path:line: text` for every place outside the allowed homes that spells this cloud's name."""
    allowed = SHARED + homes(cloud)
    pattern = spelt(cloud)
    found = []
    for path in project_files():
        if path.startswith(allowed):
            continue
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path}:{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
                  if pattern.search(line)]
    return found


def test_the_search_covers_every_cloud_with_resources():
    assert NAMED == ["alicloud", "aws", "tencentcloud"]


@pytest.mark.parametrize("cloud", NAMED)
def test_a_clouds_name_is_spelt_only_in_its_homes(cloud):
    assert strays(cloud) == [], f"{cloud} is named outside its homes; derive it from clouds"


@pytest.mark.parametrize("line", ['KEYS = ("aws:region",)', "if cloud == 'aws':", 'TOKEN = "aws:ec2/vpc:Vpc"',
                                  '[ "$GF_CLOUD" = aws ] && x', "  aws) cloud_copy ;;", "  local|aws) :;;"])
def test_the_pattern_finds_a_literal(line):
    assert spelt("aws").search(line)


@pytest.mark.parametrize("line", ["import pulumi_aws as aws", "aws.ec2.Vpc(...)", "see docs/cloud-facts.md#aws-spot",
                                  'STORE_CLIENT = "awscli==1.46.3"', 'if [ "$(command -v aws)" = "$TOOLS/bin/aws" ]',
                                  "s3_copy() { # SRC DST [aws option...]"])
def test_the_pattern_ignores_what_is_not_the_clouds_name(line):
    assert not spelt("aws").search(line)
