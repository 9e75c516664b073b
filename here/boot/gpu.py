"""GF_FAKE_GPU: the only hardware the harness fakes. With it on (the default: no harness host lends its GPUs to a
machine) a node gets the GPU stack its image would have, answering without a GPU: device files (stage.sh), a stub
`nvidia-smi` listing the catalog's GPUs with the stack's driver, a stub `nvcc` for the stack's CUDA, a stub of the
container toolkit's hook that Docker's `--gpus` runs, and a stub libnccl.so.2 (SONAME and ncclGetVersion only, built
here with the host's C compiler) that a unit indexes with ldconfig at power-on. Every stub says what it is in its
first lines. GF_FAKE_GPU=0 boots the nodes without any.

The stack is the image's: AWS's Deep Learning AMI brings its own driver (580.x/595.x, docs/boot-findings.md), a
plain image the stack `gpufleet-driver` installs from NVIDIA's repository (the plan's pin), which this machine
cannot reach, so the fake stands in for the result of that install too.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from here.boot.rootfs import CACHE

ENV = "GF_FAKE_GPU"
UNIT = "gpufleet-boot-fake-gpu.service"


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


@dataclass(frozen=True)
class FakeGpu:
    """GPUs and the stack in front of them: count and model from the catalog, driver/CUDA/NCCL from the image."""

    count: int
    model: str
    driver: str
    cuda: str
    nccl: str = "2.27.3"


NVIDIA_SMI = """#!/bin/bash
# GF_FAKE_GPU stand-in for nvidia-smi (here/boot/gpu.py): {count} x {model}, driver {driver}. No GPU answers:
# every query field reads as a healthy idle card would report it (unknown fields [N/A]).
field() {{ # NAME GPU-INDEX
  case "$1" in
    index) echo "$2" ;;
    name) echo "NVIDIA {model}" ;;
    driver_version) echo "{driver}" ;;
    pci.bus_id|gpu_bus_id) printf '00000000:%02X:00.0\\n' $((16 + $2)) ;;
    retired_pages.pending|remapped_rows.pending|remapped_rows.failure) echo "No" ;;
    ecc.errors.*) echo "0" ;;
    pcie.link.gen.*) echo "4" ;;
    pcie.link.width.*) echo "16" ;;
    clocks_throttle_reasons.active|clocks_event_reasons.active) echo "0x0000000000000000" ;;
    clocks.sm|clocks.max.sm) echo "1590" ;;
    *) echo "[N/A]" ;;
  esac
}}
query=""
for arg in "$@"; do
  case "$arg" in --query-gpu=*|--query-remapped-rows=*) query="${{arg#*=}}" ;; esac
done
if [ -n "$query" ]; then
  IFS=, read -ra names <<< "$query"
  for i in $(seq 0 $(({count} - 1))); do
    row=()
    for name in "${{names[@]}}"; do row+=("$(field "$name" "$i")"); done
    (IFS=,; echo "${{row[*]}}") | sed 's/,/, /g'
  done
  exit 0
fi
case "$*" in
  -L) for i in $(seq 0 $(({count} - 1))); do echo "GPU $i: NVIDIA {model} (UUID: GPU-fake-$i)"; done ;;
  *) echo "NVIDIA-SMI {driver}    Driver Version: {driver}    CUDA Version: {cuda}"
     for i in $(seq 0 $(({count} - 1))); do echo "|   $i  NVIDIA {model}  (fake)"; done ;;
esac
"""

GATE_DROP_IN = """# GF_FAKE_GPU (here/boot/gpu.py): the gate measures {count} CPU devices for the GPUs.
[Service]
Environment=GF_HEALTH_STAND_IN={count}
"""

NVCC = """#!/bin/bash
# GF_FAKE_GPU stand-in for nvcc (here/boot/gpu.py).
echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release {cuda}, V{cuda}.0"
"""

LIBNCCL_C = """/* GF_FAKE_GPU stand-in for NCCL (here/boot/gpu.py): the SONAME and version, nothing else. */
int ncclGetVersion(int *version) { *version = %d; return 0; }
"""

# Docker registers its `--gpus` driver at start only where this hook is on PATH, and runs it before each GPU container
# (docs/cloud-facts.md#docker-gpus); the NVIDIA Container Toolkit brings it (gpufleet-driver installs it on plain
# images, the DLAMI has it).
CONTAINER_HOOK = """#!/bin/sh
# GF_FAKE_GPU stand-in for nvidia-container-runtime-hook (here/boot/gpu.py): Docker's OCI prestart hook for
# `--gpus`. No GPU, driver or library goes into the container; the container's state (stdin) is read and dropped.
cat > /dev/null
"""

LDCONFIG_UNIT = """# GF_FAKE_GPU (here/boot/gpu.py): index the stub libnccl before anything looks for it.
[Unit]
Description=gpufleet boot harness: fake GPU stack
DefaultDependencies=no
Before=sysinit.target cloud-init-local.service

[Service]
Type=oneshot
ExecStart=/sbin/ldconfig

[Install]
WantedBy=sysinit.target
"""


def _libnccl(version: str) -> bytes:
    major, minor, patch = (int(p) for p in version.split("."))
    out = CACHE / "fake-gpu" / f"libnccl.so.{version}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        source = out.with_suffix(".c")
        source.write_text(LIBNCCL_C % (major * 10000 + minor * 100 + patch))
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", str(out), str(source)],
                       check=True)
    return out.read_bytes()


def files(gpu: FakeGpu) -> dict[str, tuple[bytes, int]]:
    """The stack's files on the node's disk (path -> content, mode)."""
    fields = {"count": gpu.count, "model": gpu.model, "driver": gpu.driver, "cuda": gpu.cuda}
    lib = "/usr/lib/x86_64-linux-gnu"
    return {
        "/usr/bin/nvidia-smi": (NVIDIA_SMI.format(**fields).encode(), 0o755),
        f"/usr/local/cuda-{gpu.cuda}/bin/nvcc": (NVCC.format(**fields).encode(), 0o755),
        f"{lib}/libnccl.so.{gpu.nccl}": (_libnccl(gpu.nccl), 0o644),
        "/usr/local/bin/nvidia-container-runtime-hook": (CONTAINER_HOOK.encode(), 0o755),
        f"/etc/systemd/system/{UNIT}": (LDCONFIG_UNIT.encode(), 0o644),
        "/etc/systemd/system/gpufleet-gate.service.d/gpufleet-boot-fake-gpu.conf":
            (GATE_DROP_IN.format(**fields).encode(), 0o644),
    }


def links() -> dict[str, str]:
    """The stack's unit, enabled."""
    return {f"/etc/systemd/system/sysinit.target.wants/{UNIT}": f"/etc/systemd/system/{UNIT}"}
