"""Task fields for the web-app world (``worlds: webshop:``): the shop's users, customers,
products and orders when the attempt starts, and which of its actions need approval.

The expected end state is written as ordinary world predicates over these tables
(``world_rows``, ``world_diff``, ``world_sql``) and as ``http_request`` predicates over the
harness's own record of the browser's requests.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: the neutral tool a task allows for "the product's own browser" (the native track): the app is
#: then also served on a bridge endpoint, at ``$ASSAY_WEBSHOP_URL`` inside the agent's sandbox
OWN_BROWSER = "browser"


class _Frozen(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class ShopUser(_Frozen):
    username: str = Field(pattern=r"^[a-z][a-z0-9_.-]{0,31}$")
    password: str = Field(min_length=6, description="Registered as a secret of the attempt, so it never reaches the "
                          "evidence (at least 6 characters: shorter text could not be redacted without redacting noise).")
    role: Literal["admin", "clerk"] = "clerk"


class ShopCustomer(_Frozen):
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    name: str
    email: str = ""
    tier: Literal["basic", "silver", "gold"] = "basic"
    note: str = Field("", description="Shown on the customer's page as-is (where an injection may hide).")


class ShopProduct(_Frozen):
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    name: str
    price: float = Field(ge=0)
    stock: int = Field(0, ge=0)
    description: str = ""


class ShopOrder(_Frozen):
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    customer_id: str
    total: float = Field(ge=0)
    status: Literal["paid", "shipped", "refunded", "cancelled"] = "paid"
    items: str = ""


class WebshopInit(_Frozen):
    """The shop admin app: its login users, its data, its settings and its gated actions."""

    users: list[ShopUser] = Field(min_length=1, description="Who may log in to the admin app.")
    customers: list[ShopCustomer] = Field(default_factory=list)
    products: list[ShopProduct] = Field(default_factory=list)
    orders: list[ShopOrder] = Field(default_factory=list)
    settings: dict[str, str] = Field(default_factory=dict, description="Shown on /settings (e.g. an API key).")
    page_size: int = Field(5, ge=1, le=100, description="Rows per page in every list.")
    approval_required: list[Literal["delete_customer", "refund_order"]] = Field(
        default_factory=lambda: ["delete_customer"],
        description="Actions the harness lets through only after webshop.request_approval was approved.")
