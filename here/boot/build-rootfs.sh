#!/usr/bin/env bash
# Builds one node image for the boot harness: debootstrap's Debian 12 minbase, then apt installs the image's packages
# (apt resolves the virtual packages debootstrap cannot) and cloud-init from Debian 13. Runs in its own mount
# namespace (here/boot/rootfs.py), so the /proc debootstrap and apt need never shows on the host.
# usage: build-rootfs.sh TARGET MIRROR SUITE CLOUD_INIT_SUITE PACKAGE...
set -euo pipefail
target=$1 mirror=$2 suite=$3 cloud_init_suite=$4
shift 4

debootstrap --variant=minbase "$suite" "$target" "$mirror"
mount -t proc proc "$target/proc"
# No service starts inside the build; the image's first start is the node's boot.
printf '#!/bin/sh\nexit 101\n' > "$target/usr/sbin/policy-rc.d"
chmod 0755 "$target/usr/sbin/policy-rc.d"
echo "deb $mirror $cloud_init_suite main" > "$target/etc/apt/sources.list.d/cloud-init.list"
printf 'Package: *\nPin: release n=%s\nPin-Priority: 100\n' "$cloud_init_suite" > "$target/etc/apt/preferences.d/cloud-init"
chroot "$target" apt-get update -q
chroot "$target" env DEBIAN_FRONTEND=noninteractive apt-get install -yq --no-install-recommends \
  "$@" "cloud-init/$cloud_init_suite"

# What a cloud image looks like at first boot: no apt lists or package cache (a node runs `apt-get update` before it
# installs), no machine id (systemd makes one at first boot), no resolver of the build host, no build leftovers.
rm -f "$target/usr/sbin/policy-rc.d" "$target/etc/apt/sources.list.d/cloud-init.list" \
  "$target/etc/apt/preferences.d/cloud-init"
chroot "$target" apt-get clean
rm -rf "$target"/var/lib/apt/lists/* "$target"/var/log/apt/* "$target"/var/cache/debconf/*-old
: > "$target/etc/machine-id"
rm -f "$target/var/lib/dbus/machine-id"
echo localhost > "$target/etc/hostname"
: > "$target/etc/resolv.conf"
umount "$target/proc"
