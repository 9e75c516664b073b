"""DCGM's diagnostics (`dcgmi diag -r LEVEL -j`) where the image has DCGM: level 1 (seconds: deployment checks) by
default, 2 or 3 (minutes: PCIe, memory, a stress load) on request.

The JSON is DCGM 4's ("DCGM Diagnostic": test_categories -> tests -> results per entity, a test_summary) or DCGM 3's
("DCGM GPU Diagnostic": results with gpu_ids); statuses are compared case-free. A test fails when a result or its
summary says Fail; Skip and Warn pass with their text in the detail. dcgmi needs its host engine (nv-hostengine, the
image's nvidia-dcgm service): without one the check is skipped with dcgmi's words, not failed.
"""

from __future__ import annotations

import json

from health import tools
from health.result import Check, failed, judge, skipped

TIMEOUT_S = {1: 300, 2: 1200, 3: 3600}
"""Generous: level 2 runs 2.5-10.5 minutes on 8-GPU nodes."""
_NO_ENGINE = ("unable to establish a connection", "host engine", "nv-hostengine")


def _warnings(result: dict) -> list[str]:
    return [w.get("warning", "") if isinstance(w, dict) else str(w) for w in result.get("warnings", [])]


def _entity(result: dict) -> str:
    if "entity_id" in result:
        return f"{result.get('entity_group', 'GPU')} {result['entity_id']}"
    return f"GPU {result.get('gpu_ids', result.get('gpu_id', '?'))}"


def parse(document: dict, level: int) -> list[Check]:
    """One row per test: the number of entities that failed it (0 passes)."""
    body = document.get("DCGM Diagnostic") or document.get("DCGM GPU Diagnostic")
    if body is None:
        return [failed("dcgm", f"level{level}", "dcgmi wrote JSON without a diagnostic section")]
    if body.get("runtime_error"):
        return [failed("dcgm", f"level{level}", f"runtime error: {body['runtime_error']}")]
    found = []
    for category in body.get("test_categories", []):
        for test in category.get("tests", []):
            results = test.get("results", [])
            bad = [r for r in results if str(r.get("status", "")).lower() == "fail"]
            summary_failed = str(test.get("test_summary", {}).get("status", "")).lower() == "fail"
            count = len(bad) or int(summary_failed)
            notes = [f"{_entity(r)} {r.get('status')}: {'; '.join(_warnings(r)) or 'no message'}"
                     for r in results if str(r.get("status", "")).lower() in ("fail", "warn", "skip")]
            found.append(judge("dcgm", f"{category.get('category', '')}/{test.get('name', '')}", float(count),
                               "entities", 0.0, "<=", " | ".join(notes)[:500]))
    return found or [failed("dcgm", f"level{level}", "dcgmi reported no tests")]


def checks(level: int) -> list[Check]:
    """Run the diagnostics at ``level`` (1-3) and judge them; skipped without dcgmi or its host engine."""
    if not tools.available("dcgmi"):
        return [skipped("dcgm", f"level{level}", "dcgmi is not installed")]
    try:
        text = tools.run("dcgmi", "diag", "-r", str(level), "-j", timeout_s=TIMEOUT_S[level], ok_codes=None,
                         with_stderr=True)
    except tools.ToolError as error:
        return [failed("dcgm", f"level{level}", str(error))]
    try:
        document = json.loads(text[text.find("{"): text.rfind("}") + 1])
    except json.JSONDecodeError:
        words = text.strip().splitlines()[-1:] or ["no output"]
        if any(marker in text.lower() for marker in _NO_ENGINE):
            return [skipped("dcgm", f"level{level}", f"no DCGM host engine: {words[0]}")]
        return [failed("dcgm", f"level{level}", f"dcgmi wrote no JSON: {words[0]}")]
    return parse(document, level)
