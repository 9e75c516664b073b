"""`fleet cost`: what a stack costs per hour and per month, on-demand, as its spot mix and with a reservation.

The numbers come from fleet.cost_report (the catalog's price, the cloud's documented discounts); this module reads
flags and prints a table or JSON. Stale or missing prices are warnings on stderr, never a silent number.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import Any

from rich.console import Console
from rich.table import Table

from fleet.cost_report import Overrides, cost_document
from fleet.stacks import resolve, spec_and_plan
from plan.cost import MAX_PRICE_AGE_DAYS

NO_PRICE = "no public price"


def _fraction(text: str) -> float:
    """A discount: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; write a fraction such as 0.6") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} is outside [0, 1); 0.6 means 60% off the list price")
    return value


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; write a factor such as 1.1") from None
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 10]; 1.1 means 10% dearer than the catalog")
    return value


def _days(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days")
    return int(text)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2026-07-20") from None


def register(subparsers) -> None:
    from fleet.cli import add_stack_args

    parser = subparsers.add_parser("cost", help="hourly and monthly cost of a stack (on-demand, spot mix, reserved)")
    add_stack_args(parser)
    parser.add_argument("--compare", action="store_true", help="the same GPUs on every cloud with catalog rows")
    parser.add_argument("--spot-discount", type=_fraction, help="spot discount off list, 0-1 (default: the cloud's)")
    parser.add_argument("--reserved-discount", type=_fraction, help="reservation discount off list, 0-1")
    parser.add_argument("--region-factor", type=_factor, help="price factor of the stack's region (default 1.0)")
    parser.add_argument("--max-price-age", type=_days, default=MAX_PRICE_AGE_DAYS, metavar="DAYS",
                        help=f"warn when catalog prices are older (default {MAX_PRICE_AGE_DAYS})")
    parser.add_argument("--today", type=_day, default=None, metavar="YYYY-MM-DD", help="date to age prices against")
    parser.set_defaults(run=run)


def _usd(value: float | None) -> str:
    return NO_PRICE if value is None else f"${value:,.2f}"


def _summary(document: dict[str, Any]) -> Table:
    price = document["price"]
    table = Table(title=f"{document['stack']} ({document['cloud']} {document['region'] or ''}): {document['nodes']} x "
                        f"{document['instanceType']}, {document['spotNodes']} on spot")
    for column in ("", "per hour", "per month (730 h)"):
        table.add_column(column, justify="right" if column else "left")
    for key, label in (("onDemand", "on-demand"), ("spotMix", "spot mix (expected)"), ("reserved", "reserved")):
        table.add_row(label, _usd(document["hourly"][key]), _usd(document["monthly"][key]))
    assumptions = document["assumptions"]
    table.caption = (f"prices of {price['date'] or 'unknown date'} ({price['source'] or 'no source'}); spot -"
                     f"{assumptions['spotDiscount']:.0%}, reserved -{assumptions['reservedDiscount']:.0%}, "
                     f"region x{assumptions['regionFactor']}")
    return table


def _comparison(document: dict[str, Any]) -> Table:
    table = Table(title=f"{document['gpus']} x {document['gpuModel']} on each cloud")
    for column in ("cloud", "type", "nodes", "spot", "on-demand /h", "spot mix /h", "spot mix /month", "prices of"):
        table.add_column(column)
    for row in document["compare"]:
        table.add_row(row["cloud"], row["instanceType"], str(row["nodes"]), str(row["spotNodes"]),
                      _usd(row["hourly"]["onDemand"]), _usd(row["hourly"]["spotMix"]),
                      _usd(row["monthly"]["spotMix"]), row["priceDate"])
    for cloud in document["compareMissing"]:
        table.add_row(cloud, f"no {document['gpuModel']} type in the catalog", "", "", "", "", "", "")
    return table


def run(args) -> int:
    stack = resolve(args.stack, args.stack_file)
    _, plan = spec_and_plan(stack)
    overrides = Overrides(args.spot_discount, args.reserved_discount, args.region_factor, args.max_price_age)
    document = cost_document(plan, args.today or date.today(), overrides, compare=args.compare)
    for warning in document["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    console = Console()
    console.print(_summary(document))
    if args.compare:
        console.print(_comparison(document))
    return 0
