"""Running the vendor tools the checks read (nvidia-smi, dcgmi, dmesg) and reading their CSV, so each check only
parses what it needs and every tool failure becomes one clear message."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}


class ToolError(RuntimeError):
    """A tool is absent, timed out or failed; the message says which and its last words."""


def available(tool: str) -> bool:
    return shutil.which(tool) is not None


def run(tool: str, *args: str, timeout_s: float = 120, ok_codes: tuple[int, ...] | None = (0,),
        with_stderr: bool = False) -> str:
    """The tool's stdout (and stderr, interleaved, ``with_stderr``); ToolError when it is absent, hangs past
    ``timeout_s`` or exits with a code outside ``ok_codes`` (None: any code, for tools that report findings in their
    exit status)."""
    if not available(tool):
        raise ToolError(f"{tool} is not installed")
    try:
        done = subprocess.run([tool, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if with_stderr else subprocess.PIPE, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{tool} {' '.join(args)} did not finish in {timeout_s:g} s") from None
    if ok_codes is not None and done.returncode not in ok_codes:
        words = ((done.stderr or "").strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise ToolError(f"{tool} exited {done.returncode}: {words[0]}")
    return done.stdout


def value(text: str | None) -> str | None:
    """A CSV cell without padding; None for nvidia-smi's not-available spellings."""
    if text is None:
        return None
    text = text.strip()
    return None if text.lower() in MISSING else text


def rows(text: str, fields: tuple[str, ...]) -> list[dict[str, str | None]]:
    """nvidia-smi's `--format=csv,noheader,nounits` output as one dict per line, keyed by the queried fields."""
    found = []
    for cells in csv.reader(io.StringIO(text)):
        if not cells or not "".join(cells).strip():
            continue
        if len(cells) != len(fields):
            raise ToolError(f"expected {len(fields)} columns ({', '.join(fields)}), got {len(cells)}: {cells}")
        found.append({name: value(cell) for name, cell in zip(fields, cells, strict=True)})
    return found


def query_gpus(fields: tuple[str, ...], timeout_s: float = 60) -> list[dict[str, str | None]]:
    """One row per GPU of `nvidia-smi --query-gpu`."""
    text = run("nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", timeout_s=timeout_s)
    return rows(text, fields)


def bus_key(bus_id: str) -> tuple[int, int, int]:
    """(domain, bus, device) of a PCI address as nvidia-smi ("00000000:53:00.0") or the kernel ("0000:53:00") write
    it, so the two can be matched."""
    parts = bus_id.strip().lower().split(":")
    if len(parts) != 3:
        raise ValueError(f"not a PCI address: {bus_id!r}")
    return int(parts[0], 16), int(parts[1], 16), int(parts[2].split(".")[0], 16)


def flag(text: str | None) -> int | None:
    """nvidia-smi's Yes/No or count columns as a number (Yes = 1); None when not reported."""
    if text is None:
        return None
    lowered = text.lower()
    if lowered in ("yes", "no"):
        return int(lowered == "yes")
    return int(float(text))
