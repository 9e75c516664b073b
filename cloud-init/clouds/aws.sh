# shellcheck shell=bash
# The node scripts' AWS adapter, sourced by gpufleet-lib.sh as gpufleet-cloud.sh: S3 through the aws CLI, the
# scaling group's own unhealthy path, nodes found by their gpufleet:cluster tag, the EFA installer. The instance
# role supplies every credential.

cloud_copy() { # SRC DST RECURSIVE(0|1): exactly one side is an s3:// URI
  case "$1$2" in *s3://*) ;; *) die "unsupported URI: $1 $2" ;; esac
  if [ "$3" = 1 ]; then aws s3 sync --only-show-errors "$1" "$2"; else aws s3 cp --only-show-errors "$1" "$2"; fi
}

cloud_mark_unhealthy() { # REASON
  local id
  id="$(meta "$GF_METADATA_URL/instance-id")"
  aws ec2 create-tags --region "$GF_REGION" --resources "$id" --tags "Key=gpufleet:health,Value=failed:$1"
  aws autoscaling set-instance-health --region "$GF_REGION" --instance-id "$id" --health-status Unhealthy \
    --no-should-respect-grace-period
}

cloud_addresses() { # the private addresses of the cluster's running nodes, one per line
  aws ec2 describe-instances --region "$GF_REGION" --output text \
    --filters "Name=tag:gpufleet:cluster,Values=$GF_CLUSTER" Name=instance-state-name,Values=running \
    --query 'Reservations[].Instances[].PrivateIpAddress' | tr '\t' '\n'
}

cloud_install_fabric() { # the fabric's driver stack, when the probe finds no device
  [ "$GF_FABRIC" = efa ] || return 0
  log "EFA missing: running the EFA installer"
  curl -fsSL https://efa-installer.amazonaws.com/aws-efa-installer-latest.tar.gz | tar -xz -C /tmp
  (cd /tmp/aws-efa-installer && ./efa_installer.sh -y)
}
