"""Which list price a plan reads off a catalog row: the USD price where one is public, else the China site's CNY
price; and the spot ceiling a cloud that needs one gets when the stack sets none (docs/cloud-facts.md#list-prices)."""

from __future__ import annotations

from dataclasses import dataclass

from plan.catalog import InstanceType


@dataclass(frozen=True)
class ListPrice:
    """An on-demand list price per node-hour and the currency it is in."""

    currency: str
    hourly: float | None


def in_currency(row: InstanceType, currency: str) -> float | None:
    """The row's on-demand list price in this currency; None where the catalog has none."""
    return {"USD": row.price_usd_per_hour, "CNY": row.price_cny_per_hour}.get(currency)


def list_price(row: InstanceType) -> ListPrice:
    """USD where the catalog has it, else CNY where the China site publishes one, else an unknown USD price."""
    for currency in ("USD", "CNY"):
        if (hourly := in_currency(row, currency)) is not None:
            return ListPrice(currency, hourly)
    return ListPrice("USD", None)


def spot_ceiling(stated: float | None, row: InstanceType, currency: str) -> float | None:
    """The stack's max spot price; else, on a cloud whose spot needs one (`currency`: the one its spot bids are in),
    the on-demand list price in that currency: a spot node never costs more than the same node on demand."""
    if stated is not None or not currency:
        return stated
    return in_currency(row, currency)
