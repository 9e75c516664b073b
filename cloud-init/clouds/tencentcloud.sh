# shellcheck shell=bash
# The node scripts' Tencent Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: COS through its S3 API
# (the AWS CLI, gpufleet-lib.sh's s3_compatible_copy) with the CAM role's temporary key, a failed node taken out of
# its AS group, nodes found by their gpufleet:cluster tag. HCC RDMA comes from the image (rdma-agent).

# COS's regional endpoint (its VPC address from a CVM), virtual-hosted (docs/cloud-facts.md#tencent-cos).
COS_S3_ENDPOINT="https://cos.$GF_REGION.myqcloud.com"

cam_key() { # the CAM role's temporary key from metadata, three lines: TmpSecretId, TmpSecretKey, Token
  local creds="$GF_METADATA_URL/cam/security-credentials" role
  role="$(meta "$creds/")" || return
  meta "$creds/$role" | python3 -c 'import json, sys; c = json.load(sys.stdin)
print(c["TmpSecretId"], c["TmpSecretKey"], c["Token"], sep="\n")'
}

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is a cos:// URI; the role's temporary key read per copy
  case "$1$2" in *cos://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  local key
  mapfile -t key < <(cam_key)
  [ "${#key[@]}" = 3 ] || { log "no credentials for the instance's CAM role"; return 1; }
  s3_compatible_copy "${1/#cos:/s3:}" "${2/#cos:/s3:}" "$3" "$COS_S3_ENDPOINT" "${key[@]}"
}

api() { # cvm|as ACTION 'JSON': Tencent Cloud's API (tencentcloud_api.py) signed with the role's temporary key
  local key
  mapfile -t key < <(cam_key)
  [ "${#key[@]}" = 3 ] || { log "no credentials for the instance's CAM role"; return 1; }
  TENCENTCLOUD_SECRET_ID="${key[0]}" TENCENTCLOUD_SECRET_KEY="${key[1]}" TENCENTCLOUD_SESSION_TOKEN="${key[2]}" \
    cloud_api "$@"
}

cloud_mark_unhealthy() { # REASON (kept in the health metric): the AS group replaces what it no longer holds
  local id group
  if [ "$GF_IN_SCALING_GROUP" != 1 ]; then
    log "in no AS group: \`fleet heal\` replaces it (docs/cloud-facts.md#rollout-replacement)"
    return 0
  fi
  id="$(meta "$GF_METADATA_URL/instance-id")"
  group="$(api as DescribeAutoScalingInstances "{\"InstanceIds\": [\"$id\"]}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["AutoScalingInstanceSet"][0]["AutoScalingGroupId"])')"
  # Refused when it would leave the group below its minimum (docs/cloud-facts.md#rollout-replacement): then the
  # node powers off, and the group's health check, finding it unreachable, replaces it (replace_monitor_unhealthy).
  if ! api as RemoveInstances "{\"AutoScalingGroupId\": \"$group\", \"InstanceIds\": [\"$id\"]}" >/dev/null; then
    log "the AS group is at its minimum: powering off so that its health check replaces this instance"
    systemctl --no-block poweroff
  fi
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  api cvm DescribeInstances "{\"Limit\": 100, \"Filters\": [{\"Name\": \"tag:gpufleet:cluster\", \"Values\": [\"$GF_CLUSTER\"]}]}" \
    | python3 -c 'import json,sys; [print(a) for i in json.load(sys.stdin)["InstanceSet"] for a in i["PrivateIpAddresses"]]'
}

# HCC RDMA is configured by rdma-agent, a systemd service Tencent's Linux public images that support RDMA install at
# startup; a custom image may lack it (docs/cloud-facts.md#tencent-hcc), and gpufleet does not install it. Called when
# the probe finds no RDMA device: rdma-agent gets a few minutes to appear; without it the node fails for good, since a
# replacement boots the same image. With it, the health gate judges the devices.
RDMA_AGENT_WAIT_S=300
cloud_install_fabric() {
  [ "$GF_FABRIC" = rdma ] || return 0
  local waited=0
  until systemctl cat rdma-agent.service >/dev/null 2>&1; do
    if [ "$waited" -ge "$RDMA_AGENT_WAIT_S" ]; then
      log "no rdma-agent after ${waited}s: this image does not configure HCC RDMA; boot a Tencent Linux public image" \
        "that supports RDMA (it installs rdma-agent at startup), or give the stack's image: one that has rdma-agent"
      die "fabric-stack:rdma:no-rdma-agent"
    fi
    sleep 10
    waited=$((waited + 10))
  done
  log "rdma-agent is installed; the health gate judges the RDMA devices it brings up"
}

cloud_group_leaving() { return 1; } # no termination hook on its groups: only the spot notice says a node goes

cloud_warmed() { return 1; } # no warm pool: an instance is in service once it runs

cloud_complete_drain() { return 0; }

cloud_complete_launch() { return 0; } # no warm pool, so no launching hook

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
