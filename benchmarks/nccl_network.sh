#!/usr/bin/env bash
# On a GPU machine with the job's CUDA torch: runs gpufleet-nccl's probe (the Python it carries) under each NCCL_NET
# and prints one JSON line per network. Expected: Socket -> {"network": "Socket", "version": <the wheel's NCCL>,
# "source": "torch"}; a network the machine lacks (IB without verbs devices, OFI without aws-ofi-nccl) -> "error",
# which is what makes the gate fail instead of training over sockets.
# usage: benchmarks/nccl_network.sh [PYTHON]   (a python whose torch is a CUDA build)
set -euo pipefail
python="${1:-python3}"
probe="$(mktemp --suffix=.py)"
trap 'rm -f "$probe"' EXIT
sed -n "/^nccl=\"\$(python3 - <<'PY'\$/,/^PY\$/p" "$(dirname "$0")/../cloud-init/bin/gpufleet-nccl" | sed '1d;$d' > "$probe"
for net in Socket IB OFI; do
  printf '%s ' "NCCL_NET=$net"
  NCCL_NET="$net" "$python" "$probe"
done
