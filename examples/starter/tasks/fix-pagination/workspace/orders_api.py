"""A tiny facade over the order store, as the web handlers call it."""

from pager import page_count, paginate

ORDERS = [f"order-{n:03d}" for n in range(1, 24)]


def list_orders(page=1, per_page=10):
    return {
        "page": page,
        "pages": page_count(len(ORDERS), per_page),
        "orders": paginate(ORDERS, page, per_page),
    }


if __name__ == "__main__":
    print(list_orders())
