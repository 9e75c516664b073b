"""A Mermaid flowchart of a cluster's topology from its plan, for PR comments (GitHub renders ```mermaid blocks).

Everything comes from the ClusterPlan, so the picture shows what the realizers will build: network, head, worker
group with its bounds and market mix, placement, bucket and fabric.
"""

from __future__ import annotations

from components.plan.cost import spot_nodes
from components.plan.model import ClusterPlan

# What "placement" is called on each cloud (FACTS.md).
PLACEMENT = {"aws": "cluster placement group", "alicloud": "deployment set LowLatency", "tencentcloud": "HPC cluster",
             "local": "one bridge"}


def _label(text: str) -> str:
    """Mermaid quoted-label text: no double quotes inside."""
    return '"' + text.replace('"', "#quot;") + '"'


def _market(plan: ClusterPlan) -> str:
    market, scaling = plan.market, plan.scaling
    if market.capacity_block:
        return f"capacity block {market.reservation_id}"
    spot = spot_nodes(market, scaling)
    mix = f"{scaling.workers_desired - spot} on-demand + {spot} spot"
    return f"{mix}, reservation {market.reservation_id}" if market.reservation_id else mix


def _placement(plan: ClusterPlan) -> str | None:
    if plan.anti_affinity:
        return "spread placement group"
    if plan.cloud == "tencentcloud" and plan.fabric.kind != "rdma":
        return None
    return PLACEMENT[plan.cloud] if plan.placement_group else None


def _fabric(plan: ClusterPlan) -> str:
    fabric = plan.fabric
    devices = f" x{fabric.devices} per node" if fabric.devices else ""
    return f"{fabric.kind}{devices}, MTU {plan.network.mtu}"


def mermaid(plan: ClusterPlan) -> str:
    """The topology as a fenced ```mermaid block."""
    net, scaling, kind = plan.network, plan.scaling, plan.instance.name
    head = f"head {net.head_address}<br/>{kind} x1 on-demand"
    workers = (f"workers {kind}<br/>min {scaling.workers_min} / desired {scaling.workers_desired} / "
               f"max {scaling.workers_max}<br/>{_market(plan)}")
    nodes = [f"      head[{_label(head)}]", f"      workers[{_label(workers)}]"]
    placement = _placement(plan)
    if placement:
        nodes = ["      subgraph placement[" + _label(placement) + "]", *("  " + n for n in nodes), "      end"]
    where = f"{plan.cloud} {plan.region} {plan.zone}".replace("  ", " ").strip()
    lines = ["```mermaid", "flowchart LR",
             f"  subgraph vpc[{_label(f'VPC {net.vpc_cidr} ({where})')}]",
             f"    subgraph private[{_label(f'private subnet {net.private.cidr}')}]", *nodes, "    end"]
    if plan.cloud != "local":
        lines += [f"    subgraph public[{_label(f'public subnet {net.public.cidr}')}]", "      nat[NAT gateway]",
                  "    end"]
    lines += ["  end", f"  bucket[({_label('checkpoints ' + plan.storage.checkpoint_uri)})]",
              f"  head <-->|{_label(_fabric(plan))}| workers",
              "  head -.->|checkpoints| bucket", "  workers -.->|checkpoints| bucket"]
    if plan.cloud != "local":
        lines += ["  head --> nat", "  workers --> nat", "  nat --> internet((internet))"]
    ssh = sorted({rule.peer for rule in plan.firewall if rule.direction == "ingress" and rule.to_port == 22
                  and rule.peer != "self"})
    if ssh:
        lines.append(f"  ssh(({_label('SSH from ' + ', '.join(ssh))})) -->|22| head")
    lines.append("```")
    return "\n".join(lines)
