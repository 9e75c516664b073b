# shellcheck shell=bash
# The node scripts' Tencent Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: COS through its S3 API
# (the AWS CLI, gpufleet-lib.sh's s3_compatible_copy) with the CAM role's temporary key, a failed node taken out of
# its AS group, nodes found by their gpufleet:cluster tag. HCC images bring their RDMA stack.

# COS's regional endpoint (its VPC address from a CVM), virtual-hosted (docs/cloud-facts.md#tencent-cos).
COS_S3_ENDPOINT="https://cos.$GF_REGION.myqcloud.com"

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is a cos:// URI; the role's temporary key read per copy
  case "$1$2" in *cos://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  local creds="$GF_METADATA_URL/cam/security-credentials" role key
  role="$(meta "$creds/")" || return
  mapfile -t key < <(meta "$creds/$role" | python3 -c 'import json, sys; c = json.load(sys.stdin)
print(c["TmpSecretId"], c["TmpSecretKey"], c["Token"], sep="\n")')
  [ "${#key[@]}" = 3 ] || { log "no credentials for CAM role '$role'"; return 1; }
  s3_compatible_copy "${1/#cos:/s3:}" "${2/#cos:/s3:}" "$3" "$COS_S3_ENDPOINT" "${key[@]}"
}

cloud_mark_unhealthy() { # REASON (kept in the health metric): the AS group replaces what it no longer holds
  local id group
  id="$(meta "$GF_METADATA_URL/instance-id")"
  group="$(tccli as DescribeAutoScalingInstances --region "$GF_REGION" --InstanceIds "[\"$id\"]" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["AutoScalingInstanceSet"][0]["AutoScalingGroupId"])')"
  tccli as RemoveInstances --region "$GF_REGION" --AutoScalingGroupId "$group" --InstanceIds "[\"$id\"]"
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  tccli cvm DescribeInstances --region "$GF_REGION" --Limit 100 \
    --Filters "[{\"Name\": \"tag:gpufleet:cluster\", \"Values\": [\"$GF_CLUSTER\"]}]" \
    | python3 -c 'import json,sys; [print(a) for i in json.load(sys.stdin)["InstanceSet"] for a in i["PrivateIpAddresses"]]'
}

cloud_install_fabric() { return 0; }

cloud_group_leaving() { return 1; } # no termination hook on its groups: only the spot notice says a node goes

cloud_warmed() { return 1; } # no warm pool: an instance is in service once it runs

cloud_complete_drain() { return 0; }

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
