"""The boot harness: nodes that boot for real (docs/boot-findings.md). Each node is a Debian root filesystem (rootfs)
booted with systemd as PID 1 in its own PID, mount, UTS, IPC and network namespaces (machine), on a bridge at the
plan's addresses (network) with the VPC's DHCP and DNS (vpc), its cloud's metadata service (here.metadata), an
S3-compatible store holding the code bundle over TLS (store, tls; the local cloud's bucket is a directory every machine
mounts) and a PyPI mirror (pypi). Real cloud-init reads the user-data the plan renders through the datasource of the
cloud's images, on a machine that presents itself as the cloud's (clouds). Only GPUs and fabric are faked, behind
GF_FAKE_GPU (gpu). `cluster.Boot(plan)` puts it together, `report` says how far each node got, and nothing of a run
outlives it (lifetime)."""
