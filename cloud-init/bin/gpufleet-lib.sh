# shellcheck shell=bash
# Sourced by every gpufleet node script: one place for paths (under GPUFLEET_ROOT in local mode), logging, instance
# metadata, apt, the S3 client every cloud's store goes through, the node's settings and its cloud's adapter
# (gpufleet-cloud.sh: the functions cloud-init/clouds/adapter-functions.txt lists). A node without an adapter for its
# cloud stops here.
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
TOOLS="$ROOT/opt/gpufleet/tools"
[ ! -d "$ROOT/opt/gpufleet/venv/bin" ] || PATH="$ROOT/opt/gpufleet/venv/bin:$PATH"
[ ! -e "$TOOLS/.complete" ] || PATH="$PATH:$TOOLS/bin"
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

# The plan's mirrors (plan/mirrors.py): pip's index; apt's sources from the archive mirror in place of the image's
# (APT_SOURCES: where gpufleet adds one). apt waits for the dpkg lock and updates once a boot.
[ -z "$GF_MIRRORS_PIP" ] || export PIP_INDEX_URL="$GF_MIRRORS_PIP"
if [[ "$GF_MIRRORS_PIP" == http://* ]]; then
  PIP_TRUSTED_HOST="${GF_MIRRORS_PIP#http://}" && export PIP_TRUSTED_HOST="${PIP_TRUSTED_HOST%%/*}"
fi
APT_LOCK_TIMEOUT_S=600
APT_SOURCES="$ROOT/etc/apt/sources.list.d"
[ -z "$GF_MIRRORS_APT" ] || APT_SOURCES="$ETC/apt/sources.list.d"
apt_get() { # apt-get ARGS...
  local own=()
  [ -z "$GF_MIRRORS_APT" ] || own=(-o "Dir::Etc::SourceList=$ETC/apt/sources.list" -o "Dir::Etc::SourceParts=$APT_SOURCES")
  DEBIAN_FRONTEND=noninteractive flock -w "$APT_LOCK_TIMEOUT_S" "$RUN/apt.lock" \
    apt-get "${own[@]}" -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT_S" "$@"
}
apt_install() { # [APT-OPTION...] PACKAGE...
  if [ ! -e "$RUN/apt-updated" ]; then
    if [ -n "$GF_MIRRORS_APT" ]; then # laid out as Debian's archive is, else as Ubuntu's
      mkdir -p "$APT_SOURCES" && (. /etc/os-release && m="${GF_MIRRORS_APT%/}/$ID" r="$VERSION_CODENAME" c=main
        [ "$ID" = debian ] || c="main restricted universe multiverse"
        printf 'deb %s %s %s\n' "$m" "$r" "$c" "$m" "$r-updates" "$c" "${m/%debian/debian-security}" "$r-security" "$c"
      ) > "$ETC/apt/sources.list"
    fi
    apt_get update -q && touch "$RUN/apt-updated"
  fi
  apt_get install -yq --no-install-recommends "$@"
}
apt_sources_added() { rm -f "$RUN/apt-updated"; } # a new repository: the next apt_install refreshes the index

# The node's tools venv: the plan's pinned store client (the AWS CLI: S3, and OSS and COS through their S3 APIs) and
# the cloud's API SDK (GF_TOOLS), installed once where needed (plain Ubuntu has python3 but neither pip nor venv); a
# failed install is retried by the next call (the bundle fetch retries).
tools_install() {
  [ ! -e "$TOOLS/.complete" ] || return 0
  log "installing the node's tools ${GF_TOOLS[*]} into $TOOLS"
  rm -rf "$TOOLS"
  python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q --disable-pip-version-check "${GF_TOOLS[@]}"
  touch "$TOOLS/.complete"
  PATH="$PATH:$TOOLS/bin"
}

aws_cli() { # ARGS...: the AWS CLI, the image's where it has one
  command -v aws >/dev/null || tools_install
  # The client installed here trusts the image's store (as curl and apt do), not the copy its wheels bring.
  if [ "$(command -v aws)" = "$TOOLS/bin/aws" ]; then
    AWS_CA_BUNDLE="${AWS_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" aws "$@"
  else
    aws "$@"
  fi
}

cloud_api() { # ARGS...: the cloud's API tool (gpufleet-cloud-api), with the credentials the adapter exported
  tools_install
  GF_REGION="$GF_REGION" "$TOOLS/bin/python3" "$BIN/gpufleet-cloud-api" "$@"
}

s3_copy() { # SRC DST RECURSIVE(0|1) [aws option...]: exactly one side an s3:// URI; a tree is synced (no deletes)
  local src=$1 dst=$2 recursive=$3
  shift 3
  if [ "$recursive" = 1 ]; then
    aws_cli s3 sync --only-show-errors "$src" "$dst" "$@"
  else
    aws_cli s3 cp --only-show-errors "$src" "$dst" "$@"
  fi
}

# An S3-compatible store's temporary credentials, from the cloud's role endpoint in metadata, as the AWS CLI reads
# them; its endpoint; addressing by virtual host (what OSS's S3 API requires and COS's recommends); payload checksums
# only where the operation requires one (the AWS CLI's newer default trailers are an AWS-only extension).
s3_compatible_copy() { # SRC DST RECURSIVE ENDPOINT KEY SECRET TOKEN
  local conf="$RUN/s3-compatible.conf"
  [ -e "$conf" ] || printf '[default]\ns3 =\n  addressing_style = virtual\n' > "$conf"
  (
    export AWS_CONFIG_FILE="$conf" AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_DEFAULT_REGION="$GF_REGION" \
      AWS_ACCESS_KEY_ID="$5" AWS_SECRET_ACCESS_KEY="$6" AWS_SESSION_TOKEN="$7" \
      AWS_REQUEST_CHECKSUM_CALCULATION=when_required AWS_RESPONSE_CHECKSUM_VALIDATION=when_required
    s3_copy "$1" "$2" "$3" --endpoint-url "$4"
  )
}

node_id() { # this node's id for the job's run folders and the failure record, kept in its state directory
  [ -s "$STATE/node-id" ] || cat /proc/sys/kernel/random/uuid > "$STATE/node-id"
  cat "$STATE/node-id"
}

# The planner's NCCL/fabric env (nccl.env: NCCL_NET names the one network NCCL may use) and the fabric plugin's
# libraries, for whatever starts NCCL: the training job, the gate's NCCL probe and the gate's all-reduce.
load_nccl_env() {
  local lib
  set -a
  # shellcheck source=/dev/null
  . "$ETC/nccl.env"
  set +a
  for lib in "$ROOT/opt/amazon/efa/lib" "$ROOT/opt/amazon/ofi-nccl/lib"; do
    [ ! -d "$lib" ] || export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
}

[ -f "$BIN/gpufleet-cloud.sh" ] || die "no node-script adapter for cloud '$GF_CLOUD'"
# shellcheck source=/dev/null
. "$BIN/gpufleet-cloud.sh"
