"""What the internet rules say about a range: one that is not a network, one wider than a /8 (with its size and the
way to opt in), and narrower ranges that add up to more than a /8, each resource that holds one named once."""

from __future__ import annotations

from policy.clouds import aws as aws_t
from policy.internet import INTERNET_OPT_IN, OPT_IN_HINT
from policy.rules import evaluate


def ingress(cidr: str, name: str = "r", **extra) -> dict:
    inputs = {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": cidr} | extra
    return {"type": aws_t.SG_INGRESS, "name": name, "parent": None, "inputs": inputs, "options": {"custom": True}}


def found(resources: list[dict], rule: str) -> list[tuple[str, str]]:
    return [(f["resource"], f["message"]) for f in evaluate(resources) if f["policy"] == rule]


def test_a_range_that_is_not_a_network_is_refused_by_name():
    assert found([ingress("10.0.0.0/33")], "no-open-ingress") == [("r", (
        "ingress tcp 22-22 admits '10.0.0.0/33', which is not a network; nothing may be opened to a range that "
        "cannot be judged."))]
    assert found([ingress("[unknown]")], "no-open-ingress") == [], "a range unknown during preview waits"


def test_a_wide_range_names_its_size_and_the_opt_in():
    assert found([ingress("0.0.0.0/0")], "no-open-ingress") == [("r", (
        "ingress tcp 22-22 is open to 0.0.0.0/0 (4,294,967,296 addresses: wider than a /8 counts as the internet); "
        f"{OPT_IN_HINT}."))]
    assert found([ingress("10.0.0.0/8")], "no-open-ingress") == [], "a /8 is not wider than a /8"


def test_each_range_of_a_rule_is_judged_past_one_that_waits():
    rule = ingress("[unknown]", cidrIpv6="::/0")
    assert [m.split(" (")[0] for _, m in found([rule], "no-open-ingress")] == ["ingress tcp 22-22 is open to ::/0"]


def test_narrow_ranges_that_add_up_are_named_on_each_resource_that_holds_one_once():
    parts = [ingress("11.0.0.0/8", "a"), ingress("12.0.0.0/8", "b"), ingress("12.0.0.0/8", "b"),
             ingress("10.0.0.0/8", "c")]
    message = ("the cluster's ingress ranges (10.0.0.0/8, 11.0.0.0/8, 12.0.0.0/8) together admit 33,554,432 internet "
               f"addresses, more than a /8 holds; {OPT_IN_HINT}.")
    assert found(parts, "no-internet-by-parts") == [("a", message), ("b", message), ("c", message)], \
        "every range of the family is named, the private one too; only internet addresses are counted"
    assert found(parts[:1], "no-internet-by-parts") == [], "one public /8 is not more than a /8"
    opted = [parts[0], ingress("12.0.0.0/8", "b", description=INTERNET_OPT_IN)]
    assert found(opted, "no-internet-by-parts") == [], "a range the stack opened on purpose is not counted"
    assert found([parts[0], ingress("[unknown]", "b")], "no-internet-by-parts") == []
    assert found([parts[0], ingress("12.0.0.0/33", "b")], "no-internet-by-parts") == []
