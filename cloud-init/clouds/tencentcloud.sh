# shellcheck shell=bash
# The node scripts' Tencent Cloud adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: COS through coscli, a
# failed node taken out of its AS group, nodes found by their gpufleet:cluster tag. HCC images bring their RDMA stack.

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is a cos:// URI
  case "$1$2" in *cos://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  if [ "$3" = 1 ]; then coscli sync -r "$1" "$2"; else coscli cp "$1" "$2"; fi
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

cloud_complete_drain() { return 0; }

cloud_publish_gpu_util() { return 0; } # no scaling on GPU utilisation here
