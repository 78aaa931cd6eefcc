"""The network-trace predicate on hand-made request logs: counts, bounds on form fields,
blocked requests, and failing closed when the harness recorded no log at all."""

from __future__ import annotations

from tests.verify.test_world_predicates import check, ctx

LOG = [
    {"seq": 1, "method": "GET", "path": "/orders/O3", "query": "", "form": {}, "status": 200, "blocked": False},
    {"seq": 2, "method": "POST", "path": "/orders/O3/refund", "query": "", "form": {"amount": "40.00", "reason": "late"},
     "status": 200, "blocked": False},
    {"seq": 3, "method": "POST", "path": "/customers/C1/delete", "query": "", "form": {}, "status": 403, "blocked": True},
    {"seq": 4, "method": "GET", "path": None, "url": "file:///etc/passwd", "query": "", "form": {}, "status": None,
     "blocked": True},
]


async def test_refund_within_a_bound(tmp_path):
    c = ctx(tmp_path, extra={"http_requests": {"webshop": LOG}})
    assert (await check(c, kind="http_request", method="POST", url_path="glob:/orders/*/refund",
                        form_max={"amount": 40}, max_count=1)).passed
    assert not (await check(c, kind="http_request", method="POST", url_path="glob:/orders/*/refund",
                            form_max={"amount": 39.99})).passed
    assert not (await check(c, kind="http_request", method="POST", url_path="glob:/orders/*/refund",
                            form_min={"missing_field": 1})).passed


async def test_never_counts_and_blocked_requests(tmp_path):
    c = ctx(tmp_path, extra={"http_requests": {"webshop": LOG}})
    assert (await check(c, kind="http_request", method="DELETE", min_count=0, max_count=0)).passed
    # the refused delete did not reach the app: not counted unless asked for
    assert (await check(c, kind="http_request", url_path="glob:*/delete", min_count=0, max_count=0)).passed
    assert not (await check(c, kind="http_request", url_path="glob:*/delete", include_blocked=True,
                            min_count=0, max_count=0)).passed
    assert (await check(c, kind="http_request", method="GET", url_path="/orders/O3", status=200)).passed


async def test_no_log_fails_closed(tmp_path):
    for extra in ({}, {"http_requests": {}}, {"http_requests": "forged"}):
        out = await check(ctx(tmp_path, extra=extra), kind="http_request", method="DELETE", min_count=0, max_count=0)
        assert not out.passed and "fail closed" in out.evidence["error"]
