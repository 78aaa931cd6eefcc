"""The shop admin app the browser tasks run against: server-rendered HTML over the world's
SQLite, no JavaScript framework, no CDN (one inline ``confirm()`` on the delete button).

It is an ordinary app and knows nothing of agents or approvals: the harness serves it to the
browser through request interception (:mod:`assay.worlds.webshop.browser`) and decides there
which requests reach it. Logins live in memory (a cookie ``sid``), not in the world's tables.
"""

from __future__ import annotations

import html
import secrets
import sqlite3
from typing import Any, Callable
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

TIERS = ("basic", "silver", "gold")
Handler = Callable[[Request], Any]


def esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


def page(title: str, body: str, user: str | None = None, status: int = 200) -> HTMLResponse:
    nav = ("<nav><a href='/'>Dashboard</a> | <a href='/customers'>Customers</a> | <a href='/orders'>Orders</a> | "
           "<a href='/products'>Products</a> | <a href='/coupons'>Coupons</a> | <a href='/settings'>Settings</a> | "
           f"signed in as {esc(user)} <a href='/logout'>Log out</a></nav>") if user else ""
    return HTMLResponse(f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)} - Shop admin</title>"
                        f"</head><body>{nav}<main><h1>{esc(title)}</h1>{body}</main></body></html>", status_code=status)


def table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pager(path: str, params: dict[str, str], n: int, total: int, size: int) -> str:
    last = max(1, (total + size - 1) // size)
    links = [f"Page {n} of {last} ({total} results)"]
    if n > 1:
        links.append(f"<a href='{esc(path)}?{esc(urlencode({**params, 'page': n - 1}))}' rel='prev'>Previous</a>")
    if n < last:
        links.append(f"<a href='{esc(path)}?{esc(urlencode({**params, 'page': n + 1}))}' rel='next'>Next</a>")
    return "<p class='pager'>" + " | ".join(links) + "</p>"


class ShopApp:
    """One attempt's app over one connection (the world's)."""

    def __init__(self, db: sqlite3.Connection, page_size: int = 5):
        self.db = db
        self.size = page_size
        self.sessions: dict[str, str] = {}

    # ------------------------------------------------------------------ helpers
    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(sql, params).fetchall()]

    def row(self, sql: str, *params: Any) -> dict[str, Any] | None:
        got = self.rows(sql, *params)
        return got[0] if got else None

    def user(self, request: Request) -> str | None:
        return self.sessions.get(request.cookies.get("sid", ""))

    def paged(self, request: Request, sql: str, params: list[Any]) -> tuple[list[dict[str, Any]], int, int]:
        try:
            n = max(1, int(request.query_params.get("page", "1")))
        except ValueError:
            n = 1
        total = self.db.execute(f"SELECT COUNT(*) FROM ({sql})", params).fetchone()[0]  # noqa: S608 - fixed SQL
        got = self.rows(f"{sql} LIMIT ? OFFSET ?", *params, self.size, (n - 1) * self.size)
        return got, n, total

    def authed(self, fn: Handler) -> Handler:
        async def wrapped(request: Request) -> Response:
            user = self.user(request)
            if user is None:
                return RedirectResponse("/login?" + urlencode({"next": request.url.path}), status_code=303)
            request.state.user = user
            return await fn(request)
        return wrapped

    # ------------------------------------------------------------------ login
    async def login_form(self, request: Request, error: str = "") -> Response:
        nxt = esc(request.query_params.get("next", "/"))
        msg = f"<p class='error' role='alert'>{esc(error)}</p>" if error else ""
        return page("Sign in", f"{msg}<form method='post' action='/login'><input type='hidden' name='next' value='{nxt}'>"
                    "<label>Username <input name='username' id='username'></label>"
                    "<label>Password <input type='password' name='password' id='password'></label>"
                    "<button type='submit'>Sign in</button></form>", status=401 if error else 200)

    async def login(self, request: Request) -> Response:
        form = await request.form()
        u = self.row("SELECT username FROM users WHERE username = ? AND password = ?",
                     str(form.get("username", "")), str(form.get("password", "")))
        if u is None:
            return await self.login_form(request, "Wrong username or password.")
        sid = secrets.token_hex(16)
        self.sessions[sid] = u["username"]
        nxt = str(form.get("next", "/"))
        resp = RedirectResponse(nxt if nxt.startswith("/") and not nxt.startswith("//") else "/", status_code=303)
        resp.set_cookie("sid", sid, httponly=True)
        return resp

    async def logout(self, request: Request) -> Response:
        self.sessions.pop(request.cookies.get("sid", ""), None)
        return RedirectResponse("/login", status_code=303)

    # ------------------------------------------------------------------ pages
    async def home(self, request: Request) -> Response:
        n = {t: self.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("customers", "orders", "products")}  # noqa: S608
        return page("Dashboard", "<ul>" + "".join(f"<li>{k}: {v}</li>" for k, v in n.items()) + "</ul>", request.state.user)

    async def customers(self, request: Request) -> Response:
        q = request.query_params.get("q", "")
        got, n, total = self.paged(request, "SELECT * FROM customers WHERE name LIKE ? OR email LIKE ? ORDER BY id",
                                   [f"%{q}%", f"%{q}%"])
        rows = [[f"<a href='/customers/{esc(c['id'])}'>{esc(c['id'])}</a>", esc(c["name"]), esc(c["email"]),
                 esc(c["tier"])] for c in got]
        search = (f"<form method='get' action='/customers' role='search'><input name='q' value='{esc(q)}' "
                  "aria-label='Search customers'><button type='submit'>Search</button></form>"
                  "<p><a href='/customers/new'>New customer</a></p>")
        return page("Customers", search + table(["ID", "Name", "Email", "Tier"], rows)
                    + pager("/customers", {"q": q} if q else {}, n, total, self.size), request.state.user)

    async def customer(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        c = self.row("SELECT * FROM customers WHERE id = ?", cid)
        if c is None:
            return page("Not found", "<p>No such customer.</p>", request.state.user, 404)
        orders = [[f"<a href='/orders/{esc(o['id'])}'>{esc(o['id'])}</a>", esc(o["total"]), esc(o["status"])]
                  for o in self.rows("SELECT * FROM orders WHERE customer_id = ? ORDER BY id", cid)]
        notes = "".join(f"<li>{esc(x['author'])}: {esc(x['body'])}</li>"
                        for x in self.rows("SELECT * FROM notes WHERE customer_id = ? ORDER BY rowid", cid))
        body = (f"<dl><dt>Name</dt><dd id='name'>{esc(c['name'])}</dd><dt>Email</dt><dd id='email'>{esc(c['email'])}</dd>"
                f"<dt>Tier</dt><dd id='tier'>{esc(c['tier'])}</dd><dt>Note</dt><dd id='note'>{esc(c['note'])}</dd></dl>"
                f"<h2>Orders</h2>{table(['Order', 'Total', 'Status'], orders)}<h2>Notes</h2><ul>{notes}</ul>"
                f"<form method='post' action='/customers/{esc(cid)}/notes'><label>Add note <textarea name='body' "
                "id='note-body'></textarea></label><button type='submit'>Add note</button></form>"
                f"<form method='post' action='/customers/{esc(cid)}/delete' "
                "onsubmit=\"return confirm('Delete this customer and all their orders?')\">"
                "<button type='submit' id='delete'>Delete customer</button></form>")
        return page(f"Customer {c['name']}", body, request.state.user)

    async def add_note(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        body = str((await request.form()).get("body", "")).strip()
        if self.row("SELECT id FROM customers WHERE id = ?", cid) is None or not body:
            return page("Not saved", "<p role='alert'>A note needs a customer and a text.</p>", request.state.user, 400)
        n = self.db.execute("SELECT COUNT(*) FROM notes").fetchone()[0] + 1
        self.db.execute("INSERT INTO notes VALUES (?,?,?,?)", (f"n{n}", cid, request.state.user, body))
        return RedirectResponse(f"/customers/{cid}", status_code=303)

    async def delete_customer(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        if self.row("SELECT id FROM customers WHERE id = ?", cid) is None:
            return page("Not found", "<p>No such customer.</p>", request.state.user, 404)
        self.db.execute("DELETE FROM notes WHERE customer_id = ?", (cid,))
        self.db.execute("DELETE FROM orders WHERE customer_id = ?", (cid,))
        self.db.execute("DELETE FROM customers WHERE id = ?", (cid,))
        return page("Customer deleted", f"<p role='status'>Customer {esc(cid)} was deleted.</p>", request.state.user)

    # ------------------------------------------------------------------ a two-step form
    async def new_customer(self, request: Request) -> Response:
        return page("New customer (step 1 of 2)", "<form method='post' action='/customers/new'>"
                    "<label>Name <input name='name' id='name'></label><label>Email <input name='email' id='email'></label>"
                    "<button type='submit'>Next</button></form>", request.state.user)

    async def new_customer_step2(self, request: Request) -> Response:
        form = await request.form()
        name, email = str(form.get("name", "")).strip(), str(form.get("email", "")).strip()
        if not name or "@" not in email:
            return page("New customer (step 1 of 2)", "<p role='alert'>Name and a valid email are required.</p>",
                        request.state.user, 400)
        opts = "".join(f"<option value='{t}'>{t}</option>" for t in TIERS)
        return page("New customer (step 2 of 2)", "<form method='post' action='/customers/create'>"
                    f"<input type='hidden' name='name' value='{esc(name)}'><input type='hidden' name='email' value='{esc(email)}'>"
                    f"<p>{esc(name)} &lt;{esc(email)}&gt;</p><label>Tier <select name='tier' id='tier'>{opts}</select></label>"
                    "<button type='submit'>Create customer</button></form>", request.state.user)

    async def create_customer(self, request: Request) -> Response:
        form = await request.form()
        name, email, tier = (str(form.get(k, "")).strip() for k in ("name", "email", "tier"))
        if not name or "@" not in email or tier not in TIERS:
            return page("Not saved", "<p role='alert'>Name, email and tier are required.</p>", request.state.user, 400)
        n = self.db.execute("SELECT COUNT(*) FROM customers").fetchone()[0] + 1
        while self.row("SELECT id FROM customers WHERE id = ?", f"C{n}"):
            n += 1
        self.db.execute("INSERT INTO customers VALUES (?,?,?,?,?)", (f"C{n}", name, email, tier, ""))
        return RedirectResponse(f"/customers/C{n}", status_code=303)

    # ------------------------------------------------------------------ orders and refunds
    async def orders(self, request: Request) -> Response:
        status = request.query_params.get("status", "")
        sql, params = "SELECT o.*, c.name AS customer FROM orders o LEFT JOIN customers c ON c.id = o.customer_id", []
        if status:
            sql, params = sql + " WHERE o.status = ?", [status]
        got, n, total = self.paged(request, sql + " ORDER BY o.id", params)
        rows = [[f"<a href='/orders/{esc(o['id'])}'>{esc(o['id'])}</a>", esc(o["customer"]), esc(o["total"]),
                 esc(o["status"])] for o in got]
        opts = "".join(f"<option value='{s}'{' selected' if s == status else ''}>{s or 'any'}</option>"
                       for s in ("", "paid", "shipped", "refunded", "cancelled"))
        filt = (f"<form method='get' action='/orders'><label>Status <select name='status' id='status'>{opts}</select>"
                "</label><button type='submit'>Filter</button></form>")
        return page("Orders", filt + table(["Order", "Customer", "Total", "Status"], rows)
                    + pager("/orders", {"status": status} if status else {}, n, total, self.size), request.state.user)

    async def order(self, request: Request) -> Response:
        oid = request.path_params["oid"]
        o = self.row("SELECT * FROM orders WHERE id = ?", oid)
        if o is None:
            return page("Not found", "<p>No such order.</p>", request.state.user, 404)
        refunds = "".join(f"<li>{esc(r['amount'])}: {esc(r['reason'])}</li>"
                          for r in self.rows("SELECT * FROM refunds WHERE order_id = ? ORDER BY rowid", oid))
        body = (f"<dl><dt>Customer</dt><dd><a href='/customers/{esc(o['customer_id'])}'>{esc(o['customer_id'])}</a></dd>"
                f"<dt>Items</dt><dd id='items'>{esc(o['items'])}</dd><dt>Total</dt><dd id='total'>{esc(o['total'])}</dd>"
                f"<dt>Status</dt><dd id='status'>{esc(o['status'])}</dd></dl><h2>Refunds</h2><ul>{refunds}</ul>"
                f"<form method='post' action='/orders/{esc(oid)}/refund/review'><label>Amount <input name='amount' "
                "id='amount'></label><label>Reason <input name='reason' id='reason'></label>"
                "<button type='submit'>Review refund</button></form>")
        return page(f"Order {oid}", body, request.state.user)

    def _refund_args(self, oid: str, form: Any) -> tuple[dict[str, Any] | None, float, str, str]:
        o = self.row("SELECT * FROM orders WHERE id = ?", oid)
        reason = str(form.get("reason", "")).strip()
        try:
            amount = round(float(str(form.get("amount", ""))), 2)
        except ValueError:
            return o, 0.0, reason, "The amount must be a number."
        if o is None:
            return o, amount, reason, "No such order."
        left = o["total"] - self.db.execute("SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ?",
                                            (oid,)).fetchone()[0]
        if not 0 < amount <= round(left, 2) or not reason or o["status"] in ("refunded", "cancelled"):
            return o, amount, reason, f"A refund needs a reason and an amount above 0 and at most {left:.2f}."
        return o, amount, reason, ""

    async def refund_review(self, request: Request) -> Response:
        oid = request.path_params["oid"]
        _, amount, reason, error = self._refund_args(oid, await request.form())
        if error:
            return page("Refund not possible", f"<p role='alert'>{esc(error)}</p>", request.state.user, 400)
        return page("Confirm refund", f"<p>Refund {amount:.2f} on order {esc(oid)} ({esc(reason)})?</p>"
                    f"<form method='post' action='/orders/{esc(oid)}/refund'><input type='hidden' name='amount' "
                    f"value='{amount:.2f}'><input type='hidden' name='reason' value='{esc(reason)}'>"
                    f"<button type='submit' id='confirm'>Confirm refund</button></form><p><a href='/orders/{esc(oid)}'>"
                    "Cancel</a></p>", request.state.user)

    async def refund(self, request: Request) -> Response:
        oid = request.path_params["oid"]
        o, amount, reason, error = self._refund_args(oid, await request.form())
        if error or o is None:
            return page("Refund not possible", f"<p role='alert'>{esc(error)}</p>", request.state.user, 400)
        n = self.db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0] + 1
        self.db.execute("INSERT INTO refunds VALUES (?,?,?,?,?)", (f"R{n}", oid, amount, reason, request.state.user))
        if abs(amount - o["total"]) < 0.005:
            self.db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (oid,))
        return page("Refund issued", f"<p role='status'>Refunded {amount:.2f} on order {esc(oid)}.</p>", request.state.user)

    # ------------------------------------------------------------------ products, coupons, settings
    async def products(self, request: Request) -> Response:
        q = request.query_params.get("q", "")
        got, n, total = self.paged(request, "SELECT * FROM products WHERE name LIKE ? OR description LIKE ? ORDER BY id",
                                   [f"%{q}%", f"%{q}%"])
        rows = [[esc(p["id"]), esc(p["name"]), esc(p["price"]), esc(p["stock"]), esc(p["description"])] for p in got]
        search = (f"<form method='get' action='/products' role='search'><input name='q' value='{esc(q)}' "
                  "aria-label='Search products'><button type='submit'>Search</button></form>")
        return page("Products", search + table(["SKU", "Name", "Price", "Stock", "Description"], rows)
                    + pager("/products", {"q": q} if q else {}, n, total, self.size), request.state.user)

    async def coupons(self, request: Request) -> Response:
        rows = [[esc(c["code"]), esc(c["percent"])] for c in self.rows("SELECT * FROM coupons ORDER BY rowid")]
        form = ("<form method='post' action='/coupons'><label>Code <input name='code' id='code'></label>"
                "<label>Percent off <input name='percent' id='percent'></label><button type='submit'>Create coupon</button></form>")
        return page("Coupons", table(["Code", "Percent"], rows) + form, request.state.user)

    async def create_coupon(self, request: Request) -> Response:
        form = await request.form()
        code = str(form.get("code", "")).strip()
        try:
            pct = int(str(form.get("percent", "")))
        except ValueError:
            pct = -1
        if not code or not 0 < pct <= 100:
            return page("Not saved", "<p role='alert'>A code and a percent from 1 to 100 are required.</p>",
                        request.state.user, 400)
        n = self.db.execute("SELECT COUNT(*) FROM coupons").fetchone()[0] + 1
        self.db.execute("INSERT INTO coupons VALUES (?,?,?)", (f"K{n}", code, pct))
        return RedirectResponse("/coupons", status_code=303)

    async def settings(self, request: Request) -> Response:
        rows = [[esc(s["key"]), f"<code>{esc(s['value'])}</code>"] for s in self.rows("SELECT * FROM settings ORDER BY key")]
        return page("Settings", table(["Setting", "Value"], rows), request.state.user)

    def asgi(self) -> Starlette:
        a = self.authed
        return Starlette(routes=[
            Route("/login", self.login_form, methods=["GET"]), Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout), Route("/", a(self.home)),
            Route("/customers", a(self.customers)), Route("/customers/new", a(self.new_customer), methods=["GET"]),
            Route("/customers/new", a(self.new_customer_step2), methods=["POST"]),
            Route("/customers/create", a(self.create_customer), methods=["POST"]),
            Route("/customers/{cid}", a(self.customer)),
            Route("/customers/{cid}/notes", a(self.add_note), methods=["POST"]),
            Route("/customers/{cid}/delete", a(self.delete_customer), methods=["POST"]),
            Route("/orders", a(self.orders)), Route("/orders/{oid}", a(self.order)),
            Route("/orders/{oid}/refund/review", a(self.refund_review), methods=["POST"]),
            Route("/orders/{oid}/refund", a(self.refund), methods=["POST"]),
            Route("/products", a(self.products)), Route("/coupons", a(self.coupons), methods=["GET"]),
            Route("/coupons", a(self.create_coupon), methods=["POST"]), Route("/settings", a(self.settings)),
        ])
