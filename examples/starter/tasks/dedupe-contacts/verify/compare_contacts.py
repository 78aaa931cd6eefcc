"""Plugin predicate: the cleaned list equals the expected one, record by record.

Reports which emails are missing, unexpected or different, so a failure says what is wrong.
"""

import json


def check(ctx):
    expected = json.loads((ctx.hidden / ctx.args.get("expected", "expected.json")).read_text())
    rel = ctx.args.get("path", "contacts.clean.json")
    try:
        got = json.loads(ctx.read_text(rel))
    except FileNotFoundError:
        return False, {"path": rel, "error": "missing"}
    except ValueError as e:
        return False, {"path": rel, "error": f"not JSON: {e}"}
    if not isinstance(got, list) or not all(isinstance(r, dict) for r in got):
        return False, {"path": rel, "error": "not a JSON array of objects"}
    want = {r["email"]: r for r in expected}
    have = {}
    for r in got:
        have.setdefault(str(r.get("email")), r)
    missing = sorted(set(want) - set(have))
    unexpected = sorted(set(have) - set(want))
    different = sorted(e for e in set(want) & set(have) if have[e] != want[e])
    order_ok = [r.get("email") for r in got] == [r["email"] for r in expected]
    ok = not (missing or unexpected or different) and order_ok and len(got) == len(expected)
    return ok, {"records": len(got), "expected_records": len(expected), "missing": missing,
                "unexpected": unexpected, "different": {e: have[e] for e in different}, "sorted_by_email": order_ok}
