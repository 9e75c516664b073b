# shellcheck shell=bash
# The node scripts' Alibaba Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: OSS through ossutil with
# the RAM role's STS credentials, ESS's unhealthy path, nodes found by their gpufleet:cluster tag, the eRDMA setup.

oss() { # ossutil with the RAM role's STS credentials, read here in token mode whatever ossutil's own lookup does
  local creds="$GF_METADATA_URL/ram/security-credentials" role
  role="$(meta "$creds/")"
  (umask 077 && meta "$creds/$role" | python3 -c 'import json, sys; c = json.load(sys.stdin); print("[Credentials]",
    "endpoint=" + sys.argv[1], "accessKeyID=" + c["AccessKeyId"], "accessKeySecret=" + c["AccessKeySecret"],
    "stsToken=" + c["SecurityToken"], sep="\n")' "oss-$GF_REGION-internal.aliyuncs.com" > "$RUN/ossutil.conf")
  ossutil -c "$RUN/ossutil.conf" "$@"
}

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is an oss:// URI
  case "$1$2" in *oss://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  if [ "$3" = 1 ]; then oss cp -r -u -f "$1" "$2"; else oss cp -f "$1" "$2"; fi
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

cloud_complete_drain() { return 0; }

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
