"""The local realizer: a ClusterPlan brought up on this machine.

Each node is a network namespace on a private bridge with the plan's addresses and the plan's firewall as nftables
rules; each boots from its role's rendered user-data in local mode and runs the same node scripts a cloud node runs;
the bundled job trains across them with gloo. `cluster.up / down / status` are what `fleet up / down / status` call.
"""
