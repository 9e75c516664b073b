# shellcheck shell=bash
# Sourced by every gpufleet node script: one place for paths (under GPUFLEET_ROOT in local mode), logging and the node's settings.
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
[ ! -d "$ROOT/opt/gpufleet/venv/bin" ] || PATH="$ROOT/opt/gpufleet/venv/bin:$PATH"
export PATH
export CKPT
mkdir -p "$STATE" "$RUN"

log() { printf '%s gpufleet %s: %s\n' "$(date -u +%FT%TZ)" "${0##*/}" "$*" >&2; }
die() { log "FATAL: $*"; printf '%s\n' "$*" > "$RUN/failure"; exit 1; }
is_local() { [ "$GF_LOCAL" = 1 ]; }
