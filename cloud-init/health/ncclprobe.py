"""`python -m health.ncclprobe`: proves the fabric to NCCL once it is up. gpufleet-nccl runs it after gpufleet-fabric,
under the node's nccl.env (gpufleet-lib.sh load_nccl_env), with cloud-init/ on PYTHONPATH:

    python -m health.ncclprobe --config /etc/gpufleet/node.json --out /var/lib/gpufleet/nccl.json

It records in --out the NCCL the job loads and the network NCCL chose, and judges that network as the gate does
(health.nccl) against the one the plan expects (node.json's health.nccl_network).

The version is the library's own (torch.cuda.nccl.version(), else ncclGetVersion from libnccl.so.2), never the
SONAME's major. With a GPU, one single-rank NCCL communicator is formed with NCCL's INIT/NET log on: its "Using
network X" line is the network NCCL picked, and with NCCL_NET set NCCL fails there instead of falling back to sockets
(docs/cloud-facts.md#nccl-net). Without a GPU (or with a CPU build of torch) "network" stays empty.

Exit 0: NCCL found, on the plan's network where one was formed; 1: stdout holds the gate's reason,
`nccl-net:<NCCL_NET>:unavailable` (NCCL could not use the network NCCL_NET names), `nccl-net:<NCCL_NET>:chose=<name>`
or `nccl:not-found`; 2: bad arguments or config, or an environment without the plan's NCCL_NET.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import tempfile
from pathlib import Path

from health import nccl, result
from health.config import Fabric, UsageError, load_config


def from_code(code: int) -> str:
    """NCCL's version code: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before."""
    major, rest = divmod(code, 10000) if code >= 20900 else divmod(code, 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def library_version() -> str:
    """ncclGetVersion of the libnccl.so.2 the dynamic linker finds; "" without one."""
    try:
        lib = ctypes.CDLL("libnccl.so.2")
    except OSError:
        return ""
    code = ctypes.c_int()
    return from_code(code.value) if lib.ncclGetVersion(ctypes.byref(code)) == 0 else ""


def torch_probe(logs: Path) -> tuple[str, str]:
    """(version, network) from the job's torch; ("", "") when it has no NCCL, (version, "") without a GPU."""
    # NCCL reads its debug settings once, at its first call in the process.
    os.environ.update(nccl.DEBUG_ENV, NCCL_DEBUG_FILE=f"{logs}/nccl.%h.%p.log")
    try:
        import torch
        version = torch.cuda.nccl.version()
    except (ImportError, AttributeError, RuntimeError):
        return "", ""
    version = ".".join(map(str, version)) if isinstance(version, tuple) else from_code(version)
    if not torch.cuda.is_available():
        return version, ""
    import torch.distributed as dist
    device = torch.device("cuda", 0)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=device)
    try:
        dist.all_reduce(torch.ones(1, device=device))
        torch.cuda.synchronize()
    finally:
        dist.destroy_process_group()
    return version, nccl.parse(nccl.read_logs(logs)).network or ""


def probe() -> dict[str, str]:
    """What nccl.json records: {"version", "source", "network"}, or {"version": "", "network": "", "error"} when NCCL
    refused the network NCCL_NET names."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-nccl-") as logs:
        try:
            version, network = torch_probe(Path(logs))
        except Exception as error:  # NCCL's init failed: the network NCCL_NET names is not usable here
            first = (str(error).splitlines() or [type(error).__name__])[0]
            return {"version": "", "network": "", "error": first[:200]}
    if version:
        return {"version": version, "source": "torch", "network": network}
    return {"version": library_version(), "source": "libnccl.so.2", "network": network}


def reason(found: dict[str, str], fabric: Fabric) -> str | None:
    """The gate's reason for what the probe found, None when it passes."""
    net = fabric.nccl_net.replace(" ", "_")
    if found.get("error"):
        return f"nccl-net:{net}:unavailable"
    if not found["version"]:
        return "nccl:not-found"
    if found["network"] and not nccl.chose_expected(found["network"], fabric):
        return f"nccl-net:{net}:chose={found['network'].replace(' ', '_')}"
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m health.ncclprobe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, required=True, help="the node plan, node.json")
    p.add_argument("--out", type=Path, required=True, help="write what was found here (nccl.json)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        fabric = load_config(args.config).fabric
        if os.environ.get("NCCL_NET") != fabric.nccl_net:
            raise UsageError(f"NCCL_NET={os.environ.get('NCCL_NET')!r} in the environment, but {args.config} has "
                             f"NCCL_NET {fabric.nccl_net!r} in nccl_env: run it under the node's nccl.env "
                             "(gpufleet-lib.sh load_nccl_env)")
    except UsageError as error:
        print(f"gpufleet nccl probe: {error}", file=sys.stderr)
        return result.EXIT_USAGE
    found = probe()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found) + "\n")
    why = reason(found, fabric)
    if why:
        print(why)
        return result.EXIT_UNHEALTHY
    if found["network"]:
        print(f"gpufleet nccl probe: NCCL {found['version']} over {found['network']}", file=sys.stderr)
    else:
        print(f"gpufleet nccl probe: NCCL {found['version']}; its network not probed (no GPU for torch): "
              f"NCCL_NET={fabric.nccl_net} holds it to the fabric", file=sys.stderr)
    return result.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
