"""A Mermaid flowchart of a cluster's topology from its plan, for PR comments (GitHub renders ```mermaid blocks).

Everything comes from the ClusterPlan, so the picture shows what the realizers will build: network, head, each
worker group with its bounds and market, the placement groups around the roles that join them, bucket and fabric.
"""

from __future__ import annotations

from plan.model import HEAD, INSTANCES, MIXED, WORKER, ClusterPlan, WorkerGroupPlan


def _label(text: str) -> str:
    """Mermaid quoted-label text: no double quotes inside."""
    return '"' + text.replace('"', "#quot;") + '"'


def _market(plan: ClusterPlan, group: WorkerGroupPlan) -> str:
    market = plan.market
    if market.capacity_block:
        return f"capacity block {market.reservation_id}"
    if group.market == MIXED:
        on_demand, spot = market.split(group.desired)
        text = f"{on_demand} on-demand + {spot} spot"
    else:
        text = group.market
    return f"{text}, reservation {market.reservation_id}" if market.reservation_id else text


def _worker_node(plan: ClusterPlan, index: int, group: WorkerGroupPlan) -> tuple[str, str]:
    kind = plan.instance.name
    bounds = (f"x{group.desired}" if group.form == INSTANCES else
              f"min {group.min_size} / desired {group.desired} / max {group.max_size}")
    title = "workers" if group.name == "workers" else f"workers {group.name}"
    return f"workers{index or ''}", f"{title} {kind} ({group.form})<br/>{bounds}<br/>{_market(plan, group)}"


def _fabric(plan: ClusterPlan) -> str:
    """The fabric, its devices per node and the network cards the plan spreads its interfaces over."""
    fabric = plan.fabric
    devices = f" x{fabric.devices} per node" if fabric.devices else ""
    cards = len({nic.card for nic in fabric.interfaces if nic.kind != "interface"})
    spread = f" on {cards} network card{'s' if cards != 1 else ''}" if cards else ""
    return f"{fabric.kind}{devices}{spread}, MTU {plan.network.mtu}"


def _nodes(plan: ClusterPlan, ids: dict[str, list[str]], labels: dict[str, str]) -> list[str]:
    """Node lines, the nodes of each placement group's roles inside a subgraph labelled with the groups' names."""
    by_roles: dict[tuple[str, ...], list[str]] = {}
    for placement in plan.placements:
        by_roles.setdefault(placement.roles, []).append(placement.label)
    lines, drawn = [], set()
    for number, (roles, names) in enumerate(by_roles.items()):
        inside = [node for role in roles for node in ids[role] if node not in drawn]
        drawn |= set(inside)
        lines += [f"      subgraph placement{number or ''}[{_label(' + '.join(names))}]",
                  *(f"        {node}[{_label(labels[node])}]" for node in inside), "      end"]
    lines += [f"      {node}[{_label(labels[node])}]" for role in (HEAD, WORKER) for node in ids[role]
              if node not in drawn]
    return lines


def mermaid(plan: ClusterPlan) -> str:
    """The topology as a fenced ```mermaid block."""
    net = plan.network
    labels = {"head": f"head {net.head_address}<br/>{plan.instance.name} x1 on-demand"}
    workers = [_worker_node(plan, index, group) for index, group in enumerate(plan.workers)]
    labels |= dict(workers)
    ids = {HEAD: ["head"], WORKER: [node for node, _ in workers]}
    where = f"{plan.cloud} {plan.region} {plan.zone}".replace("  ", " ").strip()
    lines = ["```mermaid", "flowchart LR",
             f"  subgraph vpc[{_label(f'VPC {net.vpc_cidr} ({where})')}]",
             f"    subgraph private[{_label(f'private subnet {net.private.cidr}')}]", *_nodes(plan, ids, labels),
             "    end"]
    if net.nat:
        lines += [f"    subgraph public[{_label(f'public subnet {net.public.cidr}')}]", "      nat[NAT gateway]",
                  "    end"]
    lines += ["  end", f"  bucket[({_label('checkpoints ' + plan.storage.checkpoint_uri)})]",
              "  head -.->|checkpoints| bucket"]
    for node in ids[WORKER]:
        lines += [f"  head <-->|{_label(_fabric(plan))}| {node}", f"  {node} -.->|checkpoints| bucket"]
    if net.nat:
        lines += [f"  {node} --> nat" for node in ids[HEAD] + ids[WORKER]] + ["  nat --> internet((internet))"]
    ssh = sorted({rule.peer for rule in plan.firewall if rule.direction == "ingress" and rule.to_port == 22
                  and rule.peer != "self"})
    if ssh:
        lines.append(f"  ssh(({_label('SSH from ' + ', '.join(ssh))})) -->|22| head")
    lines.append("```")
    return "\n".join(lines)
