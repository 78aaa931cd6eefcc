"""Evaluators over world state (read back by the harness, never reported by the agent):
rows, read-only SQL, exact diffs, unchanged worlds, and the expected behaviour."""

from __future__ import annotations

import sqlite3
from typing import Any

from assay.records.results import Trust
from assay.spec.predicates import PredicateSpec
from assay.spec.world_predicates import BehaviourCheck, WorldDiff, WorldRows, WorldSql, WorldUnchanged
from assay.verify.context import Outcome, VerifyContext
from assay.verify.registry import evaluator
from assay.worlds.matching import subset_matches, value_matches

NON_BUSINESS = {"user"}  # the user channel records interactions, not business state


def _world(ctx: VerifyContext, name: str) -> dict[str, Any] | None:
    return ctx.extra.worlds.get(name)


def _missing(name: str, ctx: VerifyContext) -> Outcome:
    return Outcome(False, {"world": name, "error": "no such world in this attempt (fail closed)",
                           "worlds": sorted(ctx.extra.worlds)})


@evaluator("world_rows")
async def world_rows(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, WorldRows)
    w = _world(ctx, spec.world)
    if w is None:
        return _missing(spec.world, ctx)
    rows = list((w["final"].get(spec.table) or {}).values())
    hits = [r for r in rows if subset_matches(spec.where, r)]
    bad = [r for r in hits if not subset_matches(spec.expect, r)]
    count_ok = len(hits) == spec.count if spec.count is not None else len(hits) >= spec.min_count
    return Outcome(count_ok and not bad, {"world": spec.world, "table": spec.table, "matched": len(hits),
                                          "rows": hits[:20], "not_as_expected": bad[:20]})


@evaluator("world_sql")
async def world_sql(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, WorldSql)
    path = ctx.extra.world_db.get(spec.world)
    if path is None:
        return _missing(spec.world, ctx)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        db.execute("PRAGMA query_only = 1")
        try:
            rows = [list(r) for r in db.execute(spec.query).fetchmany(1000)]
        except sqlite3.Error as e:
            return Outcome(False, {"query": spec.query, "error": f"SQL error: {e}"})
    finally:
        db.close()
    ev: dict[str, Any] = {"query": spec.query, "rows": rows[:50]}
    if spec.expect_rows is not None:
        ok = len(rows) == len(spec.expect_rows) and all(
            len(a) == len(e) and all(value_matches(x, y) for x, y in zip(e, a)) for a, e in zip(rows, spec.expect_rows))
    elif spec.expect_count is not None:
        ok = len(rows) == spec.expect_count
    else:
        ok = len(rows) == 1 and len(rows[0]) == 1 and value_matches(spec.expect_scalar, rows[0][0])
    return Outcome(ok, ev)


def _actual_changes(diff: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for table, d in diff.items():
        for key, row in d.get("added", {}).items():
            out.append({"table": table, "op": "added", "id": key, "row": row})
        for key, row in d.get("removed", {}).items():
            out.append({"table": table, "op": "removed", "id": key, "row": row})
        for key, fields in d.get("changed", {}).items():
            out.append({"table": table, "op": "changed", "id": key, "fields": fields})
    return out


def _fits(exp: Any, act: dict[str, Any], initial: dict[str, Any], exact: bool) -> bool:
    if exp.table != act["table"] or exp.op != act["op"]:
        return False
    if exp.id is not None and exp.id != act["id"]:
        return False
    if exp.op == "changed":
        old = (initial.get(act["table"]) or {}).get(act["id"], {})
        if not subset_matches(exp.match, old):
            return False
        if exact and set(exp.fields) != set(act["fields"]):
            return False
        return all(f in act["fields"] and value_matches(v, act["fields"][f][1]) for f, v in exp.fields.items())
    return subset_matches(exp.match, act["row"])


@evaluator("world_diff")
async def world_diff(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, WorldDiff)
    w = _world(ctx, spec.world)
    if w is None:
        return _missing(spec.world, ctx)
    left = _actual_changes(w["diff"])
    missing = []
    for exp in spec.changes:
        hit = next((a for a in left if _fits(exp, a, w["initial"], spec.exact)), None)
        if hit is None:
            missing.append(exp.model_dump())
        else:
            left.remove(hit)
    unexpected = left if spec.exact else []
    return Outcome(not missing and not unexpected, {"world": spec.world, "missing": missing,
                                                    "unexpected": unexpected[:20], "diff": w["diff"]})


@evaluator("world_unchanged")
async def world_unchanged(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, WorldUnchanged)
    worlds = ctx.extra.worlds
    names = sorted(n for n in worlds if n not in NON_BUSINESS) if "*" in spec.worlds else spec.worlds
    absent = [n for n in names if n not in worlds]
    changed = {n: worlds[n]["diff"] for n in names if n in worlds and worlds[n]["diff"]}
    if not worlds:
        return Outcome(False, {"error": "no worlds in this attempt (fail closed)"})
    return Outcome(not absent and not changed, {"worlds": names, "absent": absent, "changed": changed})


@evaluator("behaviour", trust=Trust.recorded)
async def behaviour(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, BehaviourCheck)
    if ctx.task.spec.behaviour is None:
        return Outcome(False, {"error": "the task declares no behaviour (fail closed)"})
    verdict = ctx.extra.behaviour
    if not isinstance(verdict, dict):
        return Outcome(False, {"error": "the world session reported no behaviour (fail closed)"})
    return Outcome(bool(verdict.get("strict")), dict(verdict))
