"""What the gate reads from nvidia-smi, the kernel log, dcgmi and NCCL's log, from samples in each tool's documented
format (nvidia-smi's `--format=csv,noheader,nounits`, the NVRM Xid line, DCGM 4.6's diag JSON schema and DCGM 3's,
the INFO lines of NCCL and aws-ofi-nccl); the tools themselves are run through fake executables on PATH."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cloud-init"))

from health import clocks, dcgm, errors, nccl, pcie, tools
from nccl_emulation import EFA, ERDMA, PLAIN, nccl_log

LOAD_FIELDS = tuple(dict.fromkeys(pcie.FIELDS + clocks.FIELDS))
UNDER_LOAD = """\
0, 5, 5, 16, 16, 0x0000000000000004, 1755, 1980
1, 5, 5, 8, 16, 0x0000000000000000, 1980, 1980
2, 3, 5, 16, 16, 0x0000000000000048, 990, 1980
3, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], 1980
"""
ERRORS = """\
0, 00000000:18:00.0, 0, [N/A]
1, 00000000:2A:00.0, 2, [N/A]
2, 00000000:3A:00.0, [N/A], No
"""
REMAPS = """\
00000000:18:00.0, No, No
00000000:2A:00.0, Yes, No
00000000:3A:00.0, 0, 1
"""
KERNEL_LOG = """\
[  812.345678] NVRM: Xid (PCI:0000:2a:00): 48, pid=4242, name=python3, An uncorrectable double bit error (DBE) \
has been detected on GPU in the framebuffer at partition 6, subpartition 0.
[  900.100000] NVRM: Xid (PCI:0000:2a:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for \
remapping, reset gpu to activate.
[ 1000.200000] NVRM: Xid (PCI:0000:9b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
[ 1001.000000] nvidia-nvswitch0: open (major=508)
"""
DCGM4 = {
    "DCGM Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [
            {"name": "software", "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0,
                                              "status": "Pass"},
                                             {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1,
                                              "status": "Pass"}],
             "test_summary": {"status": "Pass"}}]},
        {"category": "Hardware", "tests": [
            {"name": "memory", "results": [
                {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
                {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Fail",
                 "warnings": [{"error_category": 4, "error_id": 29, "error_severity": 1,
                               "warning": "Memory test failed: 12 errors on GPU 1"}]}],
             "test_summary": {"status": "Fail"}},
            {"name": "pcie", "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0,
                                          "status": "Skip", "warnings": [{"error_category": 1, "error_id": 1,
                                                                          "error_severity": 2,
                                                                          "warning": "not at this level"}]}],
             "test_summary": {"status": "Skip"}}]}]},
    "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
        {"entity_id": 0, "device_id": "2335"}, {"entity_id": 1, "device_id": "2335"}]}],
    "metadata": {"Driver Version Detected": "570.133.20", "version": "4.6.0"},
}
DCGM3 = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [
    {"name": "Denylist", "results": [{"gpu_ids": "0,1,2,3", "status": "PASS"}]},
    {"name": "Page Retirement/Row Remap", "results": [
        {"gpu_ids": "2", "status": "FAIL", "warnings": [{"warning": "GPU 2 has pending row remaps", "error_id": 84}]}]},
]}]}}
def _rows(found):
    return {(c.check, c.subject): c for c in found}


def test_pcie_links_below_their_maximum_fail_and_unreported_ones_are_skipped():
    rows = _rows(pcie.checks(tools.rows(UNDER_LOAD, LOAD_FIELDS)))
    assert rows[("pcie-gen", "gpu0")].ok and rows[("pcie-width", "gpu0")].ok
    assert not rows[("pcie-width", "gpu1")].ok and rows[("pcie-width", "gpu1")].detail == "8 of 16"
    assert not rows[("pcie-gen", "gpu2")].ok and rows[("pcie-gen", "gpu2")].figure == 3.0
    assert rows[("pcie-gen", "gpu3")].ok and rows[("pcie-gen", "gpu3")].rule == "skip"


def test_clock_faults_fail_while_the_power_cap_and_idling_pass():
    rows = _rows(clocks.checks(tools.rows(UNDER_LOAD, LOAD_FIELDS)))
    assert rows[("clocks", "gpu0")].ok and "sw_power_cap" in rows[("clocks", "gpu0")].detail
    assert rows[("clocks", "gpu1")].ok
    slowed = rows[("clocks", "gpu2")]
    assert not slowed.ok and slowed.figure == 0x48 and "hw_slowdown, hw_thermal_slowdown" in slowed.detail
    assert "990 of 1980 MHz" in slowed.detail and rows[("clocks", "gpu3")].rule == "skip"


@pytest.mark.parametrize(("bit", "fault"), [(0x1, False), (0x2, False), (0x4, False), (0x8, True), (0x10, False),
                                            (0x20, True), (0x40, True), (0x80, True), (0x100, False)])
def test_each_clock_reason_is_a_fault_or_not(bit, fault):
    sample = [{"index": "0", "clocks_throttle_reasons.active": hex(bit), "clocks.sm": "1", "clocks.max.sm": "1"}]
    assert clocks.checks(sample)[0].ok is not fault


def test_memory_errors_remaps_and_xids_fail_their_gpu():
    rows = _rows(errors.checks(tools.rows(ERRORS, errors.FIELDS), tools.rows(REMAPS, errors.REMAP_FIELDS),
                               KERNEL_LOG))
    assert all(rows[(name, "gpu0")].ok for name in ("ecc", "row-remap-pending", "row-remap-failure", "xid"))
    assert ("retired-pages", "gpu0") not in rows, "a GPU with row remapping reports no page retirement"
    assert not rows[("ecc", "gpu1")].ok and rows[("ecc", "gpu1")].figure == 2.0
    assert not rows[("row-remap-pending", "gpu1")].ok
    assert not rows[("xid", "gpu1")].ok and rows[("xid", "gpu1")].detail == "Xid 48, 63"
    assert rows[("ecc", "gpu2")].rule == "skip" and rows[("retired-pages", "gpu2")].ok
    assert not rows[("row-remap-failure", "gpu2")].ok and rows[("row-remap-pending", "gpu2")].ok
    lost = rows[("xid", "pci:0000:9b:00")]
    assert not lost.ok and "79" in lost.detail, "a GPU that fell off the bus is not in nvidia-smi's list"


def test_a_single_xid_fails_its_gpu():
    log = "[ 5.0] NVRM: Xid (PCI:0000:18:00): 74, pid=1, name=python3, NVLink: fatal error detected on link 3\n"
    rows = _rows(errors.checks(tools.rows(ERRORS, errors.FIELDS), None, log))
    assert not rows[("xid", "gpu0")].ok and rows[("xid", "gpu0")].detail == "Xid 74"


def test_an_unreadable_kernel_log_skips_the_xid_check_and_no_remaps_skip_theirs():
    rows = _rows(errors.checks(tools.rows(ERRORS, errors.FIELDS), None, None))
    assert rows[("xid", "node")].rule == "skip" and not [k for k in rows if k[0].startswith("row-remap")]


def test_dcgm4_failures_are_counted_per_test_with_their_messages():
    rows = _rows(dcgm.parse(DCGM4, 2))
    assert rows[("dcgm", "Deployment/software")].ok
    memory = rows[("dcgm", "Hardware/memory")]
    assert not memory.ok and memory.figure == 1.0 and "GPU 1 Fail: Memory test failed" in memory.detail
    assert rows[("dcgm", "Hardware/pcie")].ok and "Skip" in rows[("dcgm", "Hardware/pcie")].detail


def test_dcgm3_statuses_are_read_case_free_and_a_runtime_error_fails():
    rows = _rows(dcgm.parse(DCGM3, 1))
    assert rows[("dcgm", "Deployment/Denylist")].ok
    assert not rows[("dcgm", "Deployment/Page Retirement/Row Remap")].ok
    assert "GPU 2 FAIL" in rows[("dcgm", "Deployment/Page Retirement/Row Remap")].detail
    broken = dcgm.parse({"DCGM Diagnostic": {"runtime_error": "GPU 0 is busy"}}, 1)
    assert not broken[0].ok and "GPU 0 is busy" in broken[0].detail


def test_the_nccl_parser_reads_what_nccl_and_its_plugin_print():
    """Logs as nccl_emulation writes them from NCCL's and aws-ofi-nccl's sources; the judging is
    test_health_network.py's."""
    efa = nccl.parse(nccl_log({"NCCL_NET": "OFI"}, EFA))
    assert efa == nccl.Selection("OFI", "OFI", "efa", EFA.efa_nics, None)
    erdma = nccl.parse(nccl_log({"NCCL_NET": "IB", "NCCL_NET_PLUGIN": "none"}, ERDMA))
    assert (erdma.network, erdma.plugin, erdma.devices) == ("IB", None, f"[0]{ERDMA.verbs} [RO]")
    sockets = nccl.parse(nccl_log({}, PLAIN))
    assert (sockets.network, sockets.devices) == ("Socket", f"[0]{PLAIN.interface}")
    assert nccl.parse("") == nccl.Selection(None, None, None, None, None)


# --- the tools, run for real as fake executables -----------------------------------------------------------------


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """put(name, stdout, code=0): an executable ``name`` on PATH that prints ``stdout`` and exits ``code``; it logs
    its arguments to <name>.args."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def put(name: str, stdout: str, code: int = 0) -> Path:
        (bin_dir / f"{name}.out").write_text(stdout)
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "$@" >> "{bin_dir}/{name}.args"\ncat "{bin_dir}/{name}.out"\nexit {code}\n')
        script.chmod(0o755)
        return bin_dir / f"{name}.args"

    return put


def test_query_gpus_runs_nvidia_smi_with_the_fields(fake_tools):
    args = fake_tools("nvidia-smi", UNDER_LOAD)
    found = tools.query_gpus(LOAD_FIELDS)
    assert len(found) == 4 and found[1]["pcie.link.width.current"] == "8" and found[3]["clocks.sm"] is None
    assert args.read_text().split() == [f"--query-gpu={','.join(LOAD_FIELDS)}", "--format=csv,noheader,nounits"]


def test_a_failing_or_garbled_tool_is_one_clear_error(fake_tools):
    fake_tools("nvidia-smi", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9)
    with pytest.raises(tools.ToolError, match="nvidia-smi exited 9: NVIDIA-SMI has failed"):
        tools.query_gpus(LOAD_FIELDS)
    fake_tools("nvidia-smi", "0, 5\n")
    with pytest.raises(tools.ToolError, match="expected 8 columns"):
        tools.query_gpus(LOAD_FIELDS)


def test_dcgmi_runs_at_the_asked_level_and_its_findings_exit_code_is_read(fake_tools):
    args = fake_tools("dcgmi", "Successfully ran diagnostic\n" + json.dumps(DCGM4), 226)
    rows = _rows(dcgm.checks(2))
    assert args.read_text().split() == ["diag", "-r", "2", "-j"]
    assert not rows[("dcgm", "Hardware/memory")].ok


def test_dcgmi_without_its_host_engine_is_skipped_not_failed(fake_tools):
    fake_tools("dcgmi", "Error: unable to establish a connection to the specified host: localhost\n", 255)
    assert dcgm.checks(1)[0].ok and "no DCGM host engine" in dcgm.checks(1)[0].detail
    fake_tools("dcgmi", "Segmentation fault\n", 139)
    assert not dcgm.checks(1)[0].ok


def test_no_dcgmi_skips(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert dcgm.checks(1)[0].rule == "skip"
