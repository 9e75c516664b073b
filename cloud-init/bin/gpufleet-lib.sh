# shellcheck shell=bash
# Sourced by every gpufleet node script: one place for paths (under GPUFLEET_ROOT in local mode), logging, instance
# metadata, the node's settings and its cloud's adapter (gpufleet-cloud.sh: cloud_copy, cloud_mark_unhealthy,
# cloud_addresses, cloud_install_fabric, cloud_group_leaving, cloud_complete_drain, cloud_publish_gpu_util). A node
# without an adapter for its cloud stops here.
ROOT="${GPUFLEET_ROOT:-/}"
ROOT="${ROOT%/}"
ETC="$ROOT/etc/gpufleet"
STATE="$ROOT/var/lib/gpufleet"
RUN="$ROOT/run/gpufleet"
BIN="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
export ROOT ETC STATE RUN BIN
# shellcheck source=/dev/null
. "$ETC/node.env"
CKPT="$ROOT$GF_CHECKPOINT_DIR"
CODE="$STATE/code/$GF_CODE_SHA256"
[ ! -d "$ROOT/opt/gpufleet/venv/bin" ] || PATH="$ROOT/opt/gpufleet/venv/bin:$PATH"
export PATH
export CKPT CODE
mkdir -p "$STATE" "$RUN"

log() { printf '%s gpufleet %s: %s\n' "$(date -u +%FT%TZ)" "${0##*/}" "$*" >&2; }
fail() { log "FATAL: $*"; printf '%s\n' "$*" > "$RUN/failure"; }
die() { fail "$@"; exit 1; }
is_local() { [ "$GF_LOCAL" = 1 ]; }

# GET from instance metadata. Where the cloud requires a session token, PUT for one first; the cloud's profile
# names the token URL and header, and clouds differ only in those names.
meta() { # URL
  local token
  if [ -z "$GF_IMDS_TOKEN_URL" ]; then
    curl -fsS --max-time 3 "$1"
    return
  fi
  token="$(curl -fsS --max-time 3 -X PUT -H "$GF_IMDS_TOKEN_HEADER-ttl-seconds: 21600" "$GF_IMDS_TOKEN_URL")" || return
  curl -fsS --max-time 3 -H "$GF_IMDS_TOKEN_HEADER: $token" "$1"
}

node_id() { # this node's id for the job's run folders and the failure record, kept in its state directory
  [ -s "$STATE/node-id" ] || cat /proc/sys/kernel/random/uuid > "$STATE/node-id"
  cat "$STATE/node-id"
}

# The planner's NCCL/fabric env (nccl.env: NCCL_NET names the one network NCCL may use) and the fabric plugin's
# libraries, for whatever starts NCCL: the training job and the gate's NCCL probe.
load_nccl_env() {
  local lib
  set -a
  # shellcheck source=/dev/null
  . "$ETC/nccl.env"
  set +a
  for lib in /opt/amazon/efa/lib /opt/amazon/ofi-nccl/lib; do
    [ ! -d "$lib" ] || export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
}

[ -f "$BIN/gpufleet-cloud.sh" ] || die "no node-script adapter for cloud '$GF_CLOUD'"
# shellcheck source=/dev/null
. "$BIN/gpufleet-cloud.sh"
