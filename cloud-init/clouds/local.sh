# shellcheck shell=bash
# The node scripts' adapter for the local cluster, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: the bucket is a
# directory (file:// URIs), an unhealthy node is the supervisor's to see (the health metric), and no node is
# discovered or installed beyond what the plan names.

file_sync() { # SRC_DIR DST_DIR: like an object store, the last writer of a file wins and no writer fails. Every file
  # lands by rename from a temporary name, so nodes pushing the same checkpoint at once never collide (cp -a would
  # fail with "File exists" when another node creates a file between its check and its create).
  local src=$1 dst=$2 rel tmp
  [ -d "$src" ] || return 0
  mkdir -p "$dst"
  while IFS= read -r -d '' rel; do
    mkdir -p "$dst/$(dirname "$rel")"
    tmp="$(mktemp "$dst/$(dirname "$rel")/.gf-store.XXXXXX")"
    if ! { cp -p "$src/$rel" "$tmp" && mv -f "$tmp" "$dst/$rel"; }; then
      rm -f "$tmp"
      return 1
    fi
  done < <(cd "$src" && find . -type f ! -name '.gf-store.*' -print0)
}

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is a file:// URI
  local src=$1 dst=$2
  case "$src$dst" in *file://*) ;; *) die "unsupported URI: $src $dst" ;; esac
  src=${src#file://} dst=${dst#file://}
  if [ "$3" = 1 ]; then file_sync "$src" "$dst"; else cp "$src" "$dst"; fi
}

cloud_mark_unhealthy() { return 0; } # the health metric is the report

cloud_addresses() { return 0; }

cloud_install_fabric() { return 0; }

cloud_group_leaving() { # prints the state and succeeds while `fleet up` takes this worker out for a rollout
  local state
  state="$(meta "$GF_METADATA_URL/lifecycle-state" 2>/dev/null)" && [ "$state" = Terminated ] && printf '%s\n' "$state"
}

cloud_warmed() { return 1; } # no warm pool: an instance is in service once it runs

cloud_complete_drain() { return 0; } # `fleet up` sees the node leave by its process

cloud_complete_launch() { return 0; } # no warm pool, so no launching hook

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
