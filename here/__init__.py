"""Running a cluster on this machine: local/ (`fleet up`: nodes as processes in network namespaces, the plan's
firewall as nftables rules), boot/ (`fleet up --boot`, tests/boot: real machines booting the user-data through real
cloud-init and systemd) and metadata/, the one instance metadata service both use. Cloud facts come from the cloud
profiles (clouds/); what stays here is the emulation of what a cloud's hypervisor and services answer."""
