"""One list of the node adapter's functions (cloud-init/clouds/adapter-functions.txt): every adapter defines exactly
those of its cloud_* functions, as bash sees them once it has sourced the adapter, and the node scripts call each
one from the script the list names and call no other."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clouds import CLOUDS
from plan.paths import PROJECT_ROOT

CLOUDS_DIR = PROJECT_ROOT / "cloud-init/clouds"
BIN = PROJECT_ROOT / "cloud-init/bin"
ENTRY = re.compile(r"^(cloud_\w+)\b[^\[]*\[([\w-]+)\]$")
PUBLIC = "cloud_"


def listed() -> dict[str, str]:
    """The list: function -> the node script that calls it."""
    lines = [line for line in (CLOUDS_DIR / "adapter-functions.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    entries = [ENTRY.match(line) for line in lines]
    assert all(entries), [line for line, entry in zip(lines, entries, strict=True) if not entry]
    return {entry[1]: entry[2] for entry in entries}


def sourced(node: Path, adapter: str) -> set[str]:
    """The functions a node script has once gpufleet-lib.sh has sourced the adapter, laid out as on a node (the
    adapter as gpufleet-cloud.sh beside the library, an empty node.env under GPUFLEET_ROOT)."""
    (node / "bin").mkdir(parents=True)
    shutil.copy(BIN / "gpufleet-lib.sh", node / "bin")
    (node / "bin/gpufleet-cloud.sh").write_text(adapter)
    (node / "root/etc/gpufleet").mkdir(parents=True)
    (node / "root/etc/gpufleet/node.env").write_text("")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", '. "$1" && declare -F', "-",
                           str(node / "bin/gpufleet-lib.sh")], capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "GPUFLEET_ROOT": str(node / "root")})
    return {line.split()[-1] for line in done.stdout.splitlines()}


def calls(script: Path) -> set[str]:
    """The cloud_* names a node script uses outside its comments."""
    code = [re.sub(r"(^|\s)#.*", "", line) for line in script.read_text().splitlines()]
    return set(re.findall(rf"\b{PUBLIC}\w+", "\n".join(code)))


def test_the_list_names_the_script_of_each_function():
    assert listed(), "the list is empty"
    assert all((BIN / script).is_file() for script in listed().values())


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_each_adapter_defines_the_listed_functions_and_no_other(cloud, tmp_path):
    library = sourced(tmp_path / "library", "")
    adapter = sourced(tmp_path / "node", (CLOUDS_DIR / f"{cloud}.sh").read_text())
    public = {name for name in adapter - library if name.startswith(PUBLIC)}
    assert sorted(set(listed()) - public) == [], f"{cloud}.sh lacks these functions of the list"
    assert sorted(public - set(listed())) == [], f"{cloud}.sh defines these cloud_* functions, which the list lacks"


def test_the_node_scripts_call_the_listed_functions_and_no_other(tmp_path):
    """Every listed function is called from the script the list names, and a script calls no other cloud_* name
    than the list's and the node library's own (gpufleet-lib.sh's cloud_api, which adapters call)."""
    library = {name for name in sourced(tmp_path, "") if name.startswith(PUBLIC)}
    for function, script in listed().items():
        assert function in calls(BIN / script), f"{script} does not call {function}"
    used = set().union(*(calls(script) for script in BIN.iterdir() if script.name != "gpufleet-lib.sh"))
    assert sorted(used - library) == sorted(listed())
