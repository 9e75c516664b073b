#!/usr/bin/env bash
# On a GPU machine with the job's CUDA torch: runs the gate's NCCL probe (health.ncclprobe, what gpufleet-nccl runs)
# under each NCCL_NET and prints one JSON line per network. Expected: Socket -> {"network": "Socket", "version": <the
# wheel's NCCL>, "source": "torch"}; OFI with aws-ofi-nccl >= 1.13 -> "network": "OFI"; a network the machine lacks
# (IB without verbs devices, OFI without aws-ofi-nccl) -> "error", which is what makes the gate fail instead of
# training over sockets.
# usage: benchmarks/nccl_network.sh [PYTHON]   (a python whose torch is a CUDA build)
set -euo pipefail
python="${1:-python3}"
cloud_init="$(cd "$(dirname "$0")/../cloud-init" && pwd)"
for net in Socket IB OFI; do
  printf '%s ' "NCCL_NET=$net"
  NCCL_NET="$net" PYTHONPATH="$cloud_init" "$python" -c 'import json; from health import ncclprobe
print(json.dumps(ncclprobe.probe()))'
done
