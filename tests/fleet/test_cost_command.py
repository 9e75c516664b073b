"""`fleet cost`: JSON and table for every shipped stack, overrides, warnings, and clean errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.cli import main

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml")
                for p in (Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))


def _cost(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["cost", *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_has_a_cost_document(stack, capsys):
    code, document, _ = _cost(capsys, "--stack", stack, "--today", "2026-08-01")
    assert code == 0 and document["stack"] == stack
    assert set(document["hourly"]) == {"onDemand", "spotMix", "reserved"} == set(document["monthly"])
    assert document["price"]["date"] and document["price"]["source"]


def test_p5_numbers_and_overrides(capsys):
    _, default, _ = _cost(capsys, "--stack", "aws-p5", "--today", "2026-08-01")
    assert default["nodes"] == 4 and default["spotNodes"] == 1
    assert default["monthly"]["onDemand"] == pytest.approx(default["hourly"]["onDemand"] * 730)
    _, cheaper, _ = _cost(capsys, "--stack", "aws-p5", "--spot-discount", "0.9", "--region-factor", "1.2",
                          "--today", "2026-08-01")
    assert cheaper["assumptions"]["spotDiscount"] == 0.9 and cheaper["assumptions"]["regionFactor"] == 1.2
    assert cheaper["hourly"]["onDemand"] == pytest.approx(default["hourly"]["onDemand"] * 1.2)


def test_stale_prices_warn_on_stderr(capsys):
    _, fresh, err = _cost(capsys, "--stack", "aws-p5", "--today", "2026-08-01")
    assert not fresh["price"]["stale"] and "warning" not in err
    _, stale, err = _cost(capsys, "--stack", "aws-p5", "--today", "2027-01-01")
    assert stale["price"]["stale"] and "days old" in err and stale["warnings"]
    _, allowed, _ = _cost(capsys, "--stack", "aws-p5", "--today", "2027-01-01", "--max-price-age", "400")
    assert not allowed["price"]["stale"]


def test_no_public_price_is_said_not_zeroed(capsys):
    code, document, err = _cost(capsys, "--stack", "ali-spot", "--today", "2026-08-01")
    assert code == 0 and document["hourly"]["spotMix"] is None and "no public price" in err


def test_compare_lists_each_cloud(capsys):
    _, document, _ = _cost(capsys, "--stack", "aws-p4d-capacity-block", "--compare", "--today", "2026-08-01")
    clouds = {row["cloud"] for row in document["compare"]} | set(document["compareMissing"])
    assert clouds == {"aws", "alicloud", "tencentcloud"}
    assert all(row["nodes"] * row["gpusPerNode"] >= document["gpus"] for row in document["compare"])


def test_table_output(capsys):
    assert main(["cost", "--stack", "aws-p5", "--compare", "--today", "2026-08-01"]) == 0
    out = capsys.readouterr().out
    assert "spot mix" in out and "H100" in out


@pytest.mark.parametrize("args", [["--stack", "no-such-stack"], ["--stack", "aws-p5", "--spot-discount", "1.5"],
                                  ["--stack", "aws-p5", "--region-factor", "cheap"],
                                  ["--stack", "aws-p5", "--max-price-age", "-3"],
                                  ["--stack", "aws-p5", "--today", "x"]])
def test_bad_input_exits_2_without_traceback(args, capsys):
    try:
        code = main(["cost", *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.strip()


def test_each_compared_option_puts_the_stacks_spot_share_of_its_nodes_on_spot(capsys):
    """aws-p5: 1 of 4 nodes on spot; an option of 32 smaller nodes puts 8 of them there, and prices them so."""
    _, document, _ = _cost(capsys, "--stack", "aws-p5", "--compare", "--today", "2026-08-01")
    rows = {row["instanceType"]: row for row in document["compare"]}
    assert {name: (row["nodes"], row["spotNodes"]) for name, row in rows.items()} == {
        "p5.4xlarge": (32, 8), "p5.48xlarge": (4, 1)}
    for row in rows.values():
        price, on_spot = row["priceUsdPerHour"], row["spotNodes"]
        assert row["hourly"]["spotMix"] == pytest.approx((row["nodes"] - on_spot) * price + on_spot * price * 0.4,
                                                         abs=1e-3)
