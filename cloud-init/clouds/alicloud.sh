# shellcheck shell=bash
# The node scripts' Alibaba Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: OSS through its S3 API
# (the AWS CLI, gpufleet-lib.sh's s3_compatible_copy) with the RAM role's STS credentials, ESS's unhealthy path, nodes
# found by their gpufleet:cluster tag, the eRDMA setup.

# OSS's S3-compatible VPC endpoint, virtual-hosted addressing (docs/cloud-facts.md#oss-s3-api).
OSS_S3_ENDPOINT="https://s3.oss-$GF_REGION-internal.aliyuncs.com"

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is an oss:// URI; the role's credentials read per copy
  case "$1$2" in *oss://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  local creds="$GF_METADATA_URL/ram/security-credentials" role key
  role="$(meta "$creds/")" || return
  mapfile -t key < <(meta "$creds/$role" | python3 -c 'import json, sys; c = json.load(sys.stdin)
print(c["AccessKeyId"], c["AccessKeySecret"], c["SecurityToken"], sep="\n")')
  [ "${#key[@]}" = 3 ] || { log "no credentials for RAM role '$role'"; return 1; }
  s3_compatible_copy "${1/#oss:/s3:}" "${2/#oss:/s3:}" "$3" "$OSS_S3_ENDPOINT" "${key[@]}"
}

cloud_mark_unhealthy() { # REASON
  local id
  id="$(meta "$GF_METADATA_URL/instance-id")"
  aliyun ecs TagResources --RegionId "$GF_REGION" --ResourceType instance --ResourceId.1 "$id" \
    --Tag.1.Key gpufleet:health --Tag.1.Value "failed:$1"
  aliyun ess SetInstanceHealth --RegionId "$GF_REGION" --InstanceId "$id" --HealthStatus Unhealthy
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  aliyun ecs DescribeInstances --RegionId "$GF_REGION" --Status Running --PageSize 100 \
    --Tag.1.Key gpufleet:cluster --Tag.1.Value "$GF_CLUSTER" \
    | python3 -c 'import json,sys; [print(a) for i in json.load(sys.stdin)["Instances"]["Instance"] for a in i["VpcAttributes"]["PrivateIpAddress"]["IpAddress"]]'
}

cloud_install_fabric() { # the fabric's driver stack, when the probe finds no device
  [ "$GF_FABRIC" = erdma ] || return 0
  log "eRDMA missing: running Alibaba's eRDMA setup"
  curl -fsSLo /tmp/erdma_setup.sh http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh
  bash /tmp/erdma_setup.sh --egs
}

cloud_group_leaving() { return 1; } # no termination hook on its groups: only the spot notice says a node goes

cloud_warmed() { return 1; } # no warm pool: an instance is in service once it runs

cloud_complete_drain() { return 0; }

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
