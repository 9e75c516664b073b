# shellcheck shell=bash
# The node scripts' Alibaba Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: OSS through its S3 API
# (the AWS CLI, gpufleet-lib.sh's s3_compatible_copy) with the RAM role's STS credentials, ESS's unhealthy path, nodes
# found by their gpufleet:cluster tag, the eRDMA setup.

# OSS's S3-compatible VPC endpoint, virtual-hosted addressing (docs/cloud-facts.md#oss-s3-api).
OSS_S3_ENDPOINT="https://s3.oss-$GF_REGION-internal.aliyuncs.com"

ram_key() { # the RAM role's STS key from metadata, three lines: AccessKeyId, AccessKeySecret, SecurityToken
  local creds="$GF_METADATA_URL/ram/security-credentials" role
  role="$(meta "$creds/")" || return
  meta "$creds/$role" | python3 -c 'import json, sys; c = json.load(sys.stdin)
print(c["AccessKeyId"], c["AccessKeySecret"], c["SecurityToken"], sep="\n")'
}

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is an oss:// URI; the role's credentials read per copy
  case "$1$2" in *oss://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  local key
  mapfile -t key < <(ram_key)
  [ "${#key[@]}" = 3 ] || { log "no credentials for the instance's RAM role"; return 1; }
  s3_compatible_copy "${1/#oss:/s3:}" "${2/#oss:/s3:}" "$3" "$OSS_S3_ENDPOINT" "${key[@]}"
}

api() { # ecs|ess ACTION [Name=value ...]: Alibaba's OpenAPI (alicloud_api.py) signed with the role's key
  local key
  mapfile -t key < <(ram_key)
  [ "${#key[@]}" = 3 ] || { log "no credentials for the instance's RAM role"; return 1; }
  ALIBABA_CLOUD_ACCESS_KEY_ID="${key[0]}" ALIBABA_CLOUD_ACCESS_KEY_SECRET="${key[1]}" \
    ALIBABA_CLOUD_SECURITY_TOKEN="${key[2]}" cloud_api "$@"
}

cloud_mark_unhealthy() { # REASON: tagged; and, launched by ESS, reported unhealthy there so that ESS replaces it
  local id
  id="$(meta "$GF_METADATA_URL/instance-id")"
  api ecs TagResources RegionId="$GF_REGION" ResourceType=instance ResourceId.1="$id" \
    Tag.1.Key=gpufleet:health Tag.1.Value="failed:$1" >/dev/null
  if [ "$GF_IN_SCALING_GROUP" != 1 ]; then
    log "in no scaling group: tagged; \`fleet heal\` replaces it (docs/cloud-facts.md#rollout-replacement)"
    return 0
  fi
  api ess SetInstanceHealth RegionId="$GF_REGION" InstanceId="$id" HealthStatus=Unhealthy >/dev/null
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  api ecs DescribeInstances RegionId="$GF_REGION" Status=Running PageSize=100 \
    Tag.1.Key=gpufleet:cluster Tag.1.Value="$GF_CLUSTER" \
    | python3 -c 'import json,sys; [print(a) for i in json.load(sys.stdin)["Instances"]["Instance"] for a in i["VpcAttributes"]["PrivateIpAddress"]["IpAddress"]]'
}

# The GPU eRDMA stack the way Alibaba's own eRDMA controller installs it: env_setup.sh --egs from the in-VPC mirror
# (docs/cloud-facts.md#alibaba-erdma-setup). A download that fails may be the network's (the gate fails and is retried
# on a new node); a setup that fails is the image's, so that reason is permanent.
cloud_install_fabric() { # the fabric's driver stack, when the probe finds no device
  [ "$GF_FABRIC" = erdma ] || return 0
  log "eRDMA missing: running Alibaba's eRDMA setup"
  curl -fsSLo "$RUN/erdma_setup.sh" http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh
  bash "$RUN/erdma_setup.sh" --egs || die "fabric-stack:erdma:setup"
}

cloud_group_leaving() { return 1; } # no termination hook on its groups: only the spot notice says a node goes

cloud_warmed() { return 1; } # no warm pool: an instance is in service once it runs

cloud_complete_drain() { return 0; }

cloud_complete_launch() { return 0; } # no warm pool, so no launching hook

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
