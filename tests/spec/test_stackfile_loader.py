"""Whatever a stack file holds, `fleet` answers with exit 2 and a message naming the file and the fix, never a
traceback: unreadable files, encodings, repeated keys, aliases that expand without end, and Pulumi's stack names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clouds import CLOUDS
from fleet.cli import main
from spec.errors import SpecError
from spec.stackfile import MAX_BYTES, load_stack_file

LOCAL = "config:\n  gpufleet:cluster:\n    cloud: local\n    instanceType: cpu\n    nodes: 2\n"


def refused(path: Path) -> str:
    """What `fleet plan` prints for a stack file it refuses, after checking the exit code and the file's name."""
    with pytest.raises(SpecError) as caught:
        load_stack_file(path)
    text = caught.value.render()
    assert str(path) in text and "Traceback" not in text
    return text


def test_cli_exit_codes(tmp_path, capsys):
    good = tmp_path / "Pulumi.ok.yaml"
    good.write_text(LOCAL)
    assert main(["plan", "--stack-file", str(good), "--json"]) == 0
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_bytes(b"config: {a: 1, a: 2}\n")
    capsys.readouterr()
    assert main(["plan", "--stack-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "given twice" in err and "Traceback" not in err


@pytest.mark.parametrize("text, where, lines", [
    ("config:\n  gpufleet:cluster:\n    cloud: local\n    cloud: aws\n", "gpufleet:cluster.cloud", "lines 3 and 4"),
    ("config:\n  gpufleet:cluster: {cloud: local}\n  gpufleet:cluster: {cloud: aws}\n", "gpufleet:cluster",
     "lines 2 and 3"),
    ("config:\n  x:\n    tags: {yes: 1, true: 2}\n", "x.tags.True", "lines 3 and 3"),
    ("config:\n  x:\n    - {a: 1}\n    - {b: 1, b: 2}\n", "x.1.b", "lines 4 and 4"),
])
def test_a_key_given_twice_is_refused_with_both_lines(tmp_path, text, where, lines):
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(text)
    message = refused(path)
    assert f"{where}: is given twice in the same map ({lines})" in message


def test_a_merge_key_may_be_overridden(tmp_path):
    path = tmp_path / "Pulumi.merge.yaml"
    path.write_text("config:\n  shared:base: &b {nodes: 2, cloud: aws}\n  gpufleet:cluster:\n    <<: *b\n"
                    "    cloud: local\n    instanceType: cpu\n")
    assert load_stack_file(path).config["gpufleet:cluster"] == {"nodes": 2, "cloud": "local", "instanceType": "cpu"}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-32"])
def test_encodings_editors_write(tmp_path, encoding):
    path = tmp_path / "Pulumi.enc.yaml"
    path.write_bytes(("# café\n" + LOCAL).encode(encoding))
    assert load_stack_file(path).config["gpufleet:cluster"]["cloud"] == "local"


def test_latin1_is_named_with_the_fix(tmp_path):
    path = tmp_path / "Pulumi.latin.yaml"
    path.write_bytes(("# café\n" + LOCAL).encode("latin-1"))
    message = refused(path)
    assert "not UTF-8" in message and "Latin-1" in message and "line 1" in message and "iconv" in message


def test_utf16_without_a_bom_and_binary_files(tmp_path):
    no_bom = tmp_path / "Pulumi.u16.yaml"
    no_bom.write_bytes(LOCAL.encode("utf-16-le"))
    assert "UTF-16 without a byte-order mark" in refused(no_bom)
    binary = tmp_path / "Pulumi.bin.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    assert "not a text file" in refused(binary)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    rows = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"  {name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text("config:\n" + "\n".join(rows) + "\n  gpufleet:cluster: {cloud: local, tags: {x: *i}}\n")
    assert path.stat().st_size < 800
    assert "expands to more than 100,000 values" in refused(path)


def test_aliases_within_bounds_still_work(tmp_path):
    path = tmp_path / "Pulumi.alias.yaml"
    path.write_text("config:\n  shared:team: &t {team: ml}\n  gpufleet:cluster:\n    cloud: local\n    tags: *t\n")
    assert load_stack_file(path).config["gpufleet:cluster"]["tags"] == {"team": "ml"}


def test_an_alias_inside_itself_and_deep_nesting(tmp_path):
    cycle = tmp_path / "Pulumi.cycle.yaml"
    cycle.write_text("config:\n  x: &x [1, *x]\n")
    assert "alias inside the value it names" in refused(cycle)
    deep = tmp_path / "Pulumi.deep.yaml"
    deep.write_text("config:\n  a: " + "[" * 500 + "]" * 500 + "\n")
    assert "nests more than 64 levels deep" in refused(deep)


def test_size_is_bounded(tmp_path):
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(LOCAL + "# padding\n" * (MAX_BYTES // 10 + 1))
    assert "larger than 256 KiB" in refused(path)


def test_dates_stay_strings_as_the_engine_keeps_them(tmp_path):
    path = tmp_path / "Pulumi.dates.yaml"
    path.write_text(LOCAL + "    tags: {created: 2026-12-01}\n")
    stack = load_stack_file(path)
    assert stack.config["gpufleet:cluster"]["tags"] == {"created": "2026-12-01"}
    assert '"created": "2026-12-01"' in stack.engine_config()["gpufleet:cluster"]


def test_yaml_values_no_config_holds(tmp_path):
    path = tmp_path / "Pulumi.binary.yaml"
    path.write_text(LOCAL + "    tags: {blob: !!binary aGVsbG8=}\n")
    assert "holds a YAML bytes value" in refused(path)


def test_os_errors_name_the_file(tmp_path):
    assert "does not exist" in refused(tmp_path / "Pulumi.missing.yaml")
    link = tmp_path / "Pulumi.link.yaml"
    link.symlink_to(tmp_path / "nowhere.yaml")
    assert "does not exist" in refused(link)
    assert "is a directory" in refused(tmp_path)
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in refused(fifo)


@pytest.mark.parametrize("path, message", [
    (Path("/proc/self/mem"), "cannot be read: Input/output error"),
    (Path("/proc/sys/vm/compact_memory"), "cannot be read: permission denied"),
])
def test_read_errors_name_the_file(path, message):
    if not path.exists():
        pytest.skip(f"{path} is not on this system")
    if message.endswith("permission denied") and os.access(path, os.R_OK):
        pytest.skip(f"{path} is readable here")
    assert message in refused(path)


@pytest.mark.parametrize("stack", ["My_Stack", "prod.eu", "UPPER", "a" * 100])
def test_every_pulumi_stack_name_loads(tmp_path, stack):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(LOCAL)
    assert load_stack_file(path).name == stack


def test_names_pulumi_refuses(tmp_path, capsys):
    spaced = tmp_path / "Pulumi.my stack.yaml"
    spaced.write_text(LOCAL)
    assert "stack name 'my stack' has ' '" in refused(spaced)
    assert main(["plan", "--stack", "../../etc/passwd"]) == 2
    assert "'../../etc/passwd' is not a stack name" in capsys.readouterr().err
    assert main(["plan", "--stack", "a b"]) == 2
    assert "stack name 'a b'" in capsys.readouterr().err


def test_a_fully_qualified_stack_names_its_file(capsys):
    assert main(["plan", "--stack", "my-org/gpufleet/local", "--json"]) == 0


@pytest.mark.parametrize("key, meant", [
    ("gpufleet:Cluster", "gpufleet:cluster"), ("gpufleet_cluster", "gpufleet:cluster"), ("aws:Region", "aws:region"),
    ("alicloud-region", "alicloud:region"),
])
def test_keys_spelt_almost_right_are_named(tmp_path, key, meant):
    path = tmp_path / "Pulumi.keys.yaml"
    path.write_text(LOCAL.replace("gpufleet:cluster", key) if "cluster" in meant else LOCAL + f"  {key}: x\n")
    assert f"{key}: is not a key gpufleet reads; it looks like `{meant}`" in refused(path)


@pytest.mark.parametrize("cloud", [c for c in CLOUDS.values() if c.region_key], ids=lambda c: c.name)
def test_every_registered_clouds_region_key_is_known_when_misspelt(tmp_path, cloud):
    """The stack loader's provider keys come from the registry: each cloud's, and no list of its own."""
    misspelt = cloud.region_key.replace(":region", ":Region")
    path = tmp_path / "Pulumi.keys.yaml"
    path.write_text(LOCAL + f"  {misspelt}: x\n")
    assert f"{misspelt}: is not a key gpufleet reads; it looks like `{cloud.region_key}`" in refused(path)


def test_a_cluster_written_as_json_reads_as_pulumi_reads_it(tmp_path):
    path = tmp_path / "Pulumi.json.yaml"
    path.write_text("config:\n  gpufleet:cluster: '{\"cloud\": \"local\", \"instanceType\": \"cpu\", \"nodes\": 2}'\n")
    assert load_stack_file(path).config["gpufleet:cluster"] == {"cloud": "local", "instanceType": "cpu", "nodes": 2}
