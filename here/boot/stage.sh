#!/usr/bin/env bash
# PID 1 of a new machine until it execs systemd: runs inside the machine's fresh PID, mount, UTS, IPC and network
# namespaces (here/boot/machine.py), so every mount here lives and dies with the machine. It builds the root
# the way a VM's firmware and kernel would present it (overlay disk, /proc with the kernel's tunables read-only
# except the network's, /sys with the cloud's DMI identity, a /dev of its own, the console on a pty), then pivots
# into it and starts systemd with a bounding set that cannot reach the host kernel (modules, clock, raw I/O);
# reboot(2) stays allowed: in a PID namespace it ends the machine, not the host.
# Settings come from the environment: BOOT_LOWER BOOT_DIR BOOT_DMI BOOT_CMDLINE BOOT_GPUS BOOT_SHARES
# BOOT_BOUNDING_SET.
set -euo pipefail
root=$BOOT_DIR/root
mkdir -p "$BOOT_DIR/upper" "$BOOT_DIR/work" "$root" "$BOOT_DIR/sys"
# redirect_dir=on: a directory of the image renames as on a VM's disk, where overlayfs would otherwise answer EXDEV
# (dockerd renames /var/lib/docker/runtimes at every start, which a baked image holds:
# docs/cloud-facts.md#docker-in-the-harness).
mount -t overlay overlay -o "lowerdir=$BOOT_LOWER,upperdir=$BOOT_DIR/upper,workdir=$BOOT_DIR/work,redirect_dir=on" \
  "$root"

ro_bind() { # PATH: bind PATH onto itself read-only
  mount --bind "$1" "$1"
  mount -o remount,bind,ro "$1"
}
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,ro "$root/proc/sys"
[ ! -e "$root/proc/sysrq-trigger" ] || ro_bind "$root/proc/sysrq-trigger"
mount --bind "$BOOT_CMDLINE" "$root/proc/cmdline"

# /sys of this network namespace, read-only; /sys/class gets the machine's DMI table beside the kernel's classes.
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t sysfs -o ro sysfs "$BOOT_DIR/sys"
mount -t tmpfs -o mode=0755,nosuid,nodev,noexec tmpfs "$root/sys/class"
for class in "$BOOT_DIR"/sys/class/*; do
  mkdir "$root/sys/class/${class##*/}"
  mount --bind "$class" "$root/sys/class/${class##*/}"
done
umount -l "$BOOT_DIR/sys"
mkdir -p "$root/sys/class/dmi/id"
cp -r "$BOOT_DMI/." "$root/sys/class/dmi/id/"
mount -o remount,ro "$root/sys/class"
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"

mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
node() { mknod -m "$1" "$root/dev/$2" c "$3" "$4"; }
node 666 null 1 3; node 666 zero 1 5; node 666 full 1 7; node 666 random 1 8; node 666 urandom 1 9; node 666 tty 5 0
# GF_FAKE_GPU: the device files of the GPUs the catalog promises (no driver answers behind them).
for ((i = 0; i < ${BOOT_GPUS:-0}; i++)); do node 666 "nvidia$i" 195 "$i"; done
[ "${BOOT_GPUS:-0}" = 0 ] || node 666 nvidiactl 195 255
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
for fd in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${fd%%:*}" "$root/dev/${fd#*:}"; done
touch "$root/dev/console"
mount --bind "$(readlink -f /proc/self/fd/0)" "$root/dev/console"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
# BOOT_SHARES "HOST_DIR:PATH ...": a host directory every machine of the run mounts (the local cloud's bucket).
for share in ${BOOT_SHARES:-}; do
  mkdir -p "$root${share#*:}"
  mount --bind "${share%%:*}" "$root${share#*:}"
done

cd "$root"
pivot_root . .
umount -l .
exec /usr/bin/env -i /usr/bin/setpriv "$BOOT_BOUNDING_SET" -- /lib/systemd/systemd
