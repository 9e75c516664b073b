"""The fabric a node gets from its type's catalog row: `auto` takes the row's, the interfaces follow the fabric's
layout (EFA one per card, eRDMA ERIs dealt over the cards, others the primary alone), and the NCCL env holds the
common settings, the fabric's, its NCCL_NET, and the cloud's own last (they win)."""

from __future__ import annotations

import pytest

from plan.catalog import lookup
from plan.fabric import NCCL_ENV, nccl_network, plan_fabric, resolve_fabric
from plan.model import Interface
from plan.software import FABRIC_STACK

P4D = lookup("aws", "p4d.24xlarge")
ERDMA = lookup("alicloud", "ecs.ebmgn7ex.32xlarge")
HCC = lookup("tencentcloud", "HCCPNV4h.48XLARGE1536")


def test_auto_takes_the_rows_fabric_and_an_explicit_choice_stands():
    assert resolve_fabric("auto", P4D) == "efa"
    assert resolve_fabric("tcp", P4D) == "tcp"


def test_efa_is_the_primary_on_card_0_and_one_efa_only_interface_on_every_other_card():
    fabric = plan_fabric("auto", P4D)
    assert (fabric.kind, fabric.devices) == ("efa", P4D.fabric_devices)
    assert fabric.interfaces == (Interface(0, 0, "efa"), *(Interface(card, 0, "efa-only")
                                                           for card in range(1, P4D.fabric_devices)))


def test_erdma_deals_its_eris_over_the_cards_after_the_primary():
    assert (ERDMA.fabric_devices, ERDMA.network_cards) == (2, 2)
    fabric = plan_fabric("auto", ERDMA)
    assert fabric.interfaces == (Interface(0, 0, "interface"), Interface(0, 1, "erdma"), Interface(1, 2, "erdma"))
    one_card = plan_fabric("auto", ERDMA.model_copy(update={"fabric_devices": 3, "network_cards": None}))
    assert one_card.interfaces == (Interface(0, 0, "interface"), Interface(0, 1, "erdma"), Interface(0, 2, "erdma"),
                                   Interface(0, 3, "erdma")), "a type of unknown cards keeps its ERIs on card 0"
    three = plan_fabric("auto", ERDMA.model_copy(update={"fabric_devices": 4, "network_cards": 3}))
    assert three.interfaces == (Interface(0, 0, "interface"), Interface(0, 1, "erdma"), Interface(1, 2, "erdma"),
                                Interface(2, 3, "erdma"), Interface(0, 4, "erdma")), "ERI n on card (n - 1) mod cards"


def test_a_fabric_other_than_the_rows_has_no_devices_and_the_primary_alone():
    fabric = plan_fabric("tcp", P4D)
    assert (fabric.kind, fabric.devices, fabric.interfaces) == ("tcp", 0, (Interface(0, 0, "interface"),))
    hcc = plan_fabric("auto", HCC)
    assert (hcc.kind, hcc.devices, hcc.interfaces) == ("rdma", HCC.fabric_devices, (Interface(0, 0, "interface"),))


@pytest.mark.parametrize("row", [P4D, ERDMA, HCC], ids=lambda r: r.fabric)
def test_the_env_is_common_then_fabric_then_its_network_then_the_clouds(row):
    env = dict(plan_fabric("auto", row).nccl_env)
    assert env["NCCL_DEBUG"] == "WARN" and env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert set(dict(NCCL_ENV[row.fabric]).items()) <= set(env.items())
    assert env["NCCL_NET"] == FABRIC_STACK[row.fabric][1]
    cloud = {"NCCL_SOCKET_IFNAME": "ens5", "NCCL_NET": "Socket", "EXTRA": "1"}
    overridden = plan_fabric("auto", row, cloud)
    assert dict(overridden.nccl_env) == env | cloud, "the cloud's settings win"
    assert overridden.nccl_network == "Socket", "the network NCCL logs follows the NCCL_NET in force"


def test_the_network_name_nccl_logs_is_read_in_any_case_and_an_unknown_value_is_refused():
    assert nccl_network("AWS Libfabric") == "AWS Libfabric"
    assert nccl_network("ib") == nccl_network("IB") == "IB"
    assert plan_fabric("auto", P4D).nccl_network == "OFI"
    with pytest.raises(KeyError):
        nccl_network("tcp")
