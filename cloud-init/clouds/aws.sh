# shellcheck shell=bash
# The node scripts' AWS adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: S3 through the AWS CLI (the
# DLAMI's, or the one gpufleet-lib.sh installs; it reads the instance role's credentials from IMDSv2 itself), the
# scaling group's own unhealthy path, nodes found by their gpufleet:cluster tag, the EFA installer, the group's
# termination hook (target lifecycle state, complete-lifecycle-action) and the CloudWatch GPU series. The instance
# role supplies every credential, and allows exactly these calls (components/aws/iam.py).

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is an s3:// URI
  case "$1$2" in *s3://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  s3_copy "$@"
}

cloud_mark_unhealthy() { # REASON
  local id
  id="$(meta "$GF_METADATA_URL/instance-id")"
  aws_cli ec2 create-tags --region "$GF_REGION" --resources "$id" --tags "Key=gpufleet:health,Value=failed:$1"
  if [ "$GF_IN_SCALING_GROUP" != 1 ]; then # the head: in no group, so no group to tell
    log "in no scaling group: tagged; \`fleet heal\` replaces it (docs/cloud-facts.md#rollout-replacement)"
    return 0
  fi
  aws_cli autoscaling set-instance-health --region "$GF_REGION" --instance-id "$id" --health-status Unhealthy \
    --no-should-respect-grace-period
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  aws_cli ec2 describe-instances --region "$GF_REGION" --output text \
    --filters "Name=tag:gpufleet:cluster,Values=$GF_CLUSTER" Name=instance-state-name,Values=running \
    --query 'Reservations[].Instances[].PrivateIpAddress' | tr '\t' '\n'
}

cloud_install_fabric() { # the fabric's driver stack, when the probe finds no device
  [ "$GF_FABRIC" = efa ] || return 0
  log "EFA missing: running the EFA installer"
  curl -fsSL https://efa-installer.amazonaws.com/aws-efa-installer-latest.tar.gz | tar -xz -C /tmp
  (cd /tmp/aws-efa-installer && ./efa_installer.sh -y)
}

cloud_group_leaving() { # prints the state and succeeds while the scaling group is taking this node away
  local state
  state="$(meta "$GF_METADATA_URL/autoscaling/target-lifecycle-state" 2>/dev/null)" && [ "$state" = Terminated ] \
    && printf '%s\n' "$state"
}

cloud_warmed() { # prints the state and succeeds while the instance waits in its group's warm pool (Warmed:*)
  local state
  state="$(meta "$GF_METADATA_URL/autoscaling/target-lifecycle-state" 2>/dev/null)" && [[ $state == Warmed:* ]] \
    && printf '%s\n' "$state"
}

complete_hook() { # HOOK: completes this instance's pending lifecycle action of the hook with CONTINUE
  local id group
  id="$(meta "$GF_METADATA_URL/instance-id")"
  group="$(aws_cli autoscaling describe-auto-scaling-instances --region "$GF_REGION" --instance-ids "$id" \
    --query 'AutoScalingInstances[0].AutoScalingGroupName' --output text)"
  aws_cli autoscaling complete-lifecycle-action --region "$GF_REGION" --auto-scaling-group-name "$group" \
    --lifecycle-hook-name "$1" --instance-id "$id" --lifecycle-action-result CONTINUE
  log "completed $1 for $id in $group"
}

cloud_complete_drain() { complete_hook "$1"; } # HOOK: the checkpoint is in the bucket, the termination goes on

cloud_complete_launch() { complete_hook "$1"; } # HOOK: the bootstrap is done, the launch goes on

cloud_publish_gpu_util() { # PERCENT: the cluster's one series, in its own namespace, which its target tracking reads
  aws_cli cloudwatch put-metric-data --region "$GF_REGION" --namespace "$GF_GPU_METRIC_NAMESPACE" \
    --metric-name GPUUtilization --dimensions "Cluster=$GF_CLUSTER" --unit Percent --value "$1"
}
