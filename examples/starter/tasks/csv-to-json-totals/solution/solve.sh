#!/bin/sh
# Reference solution: aggregate with the csv module, round money to cents.
set -eu
python3 - <<'PY'
import csv
import json

regions = {}
with open("sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        qty = int(row["quantity"])
        g = regions.setdefault(row["region"], {"region": row["region"], "orders": 0, "refunds": 0, "units": 0, "revenue": 0.0})
        g["orders" if qty > 0 else "refunds"] += 1
        g["units"] += qty
        g["revenue"] = round(g["revenue"] + qty * float(row["unit_price"]), 2)
report = {
    "currency": "EUR",
    "regions": sorted(regions.values(), key=lambda g: g["region"]),
    "total_revenue": round(sum(g["revenue"] for g in regions.values()), 2),
    "orders": sum(g["orders"] for g in regions.values()),
    "top_region": max(regions.values(), key=lambda g: g["revenue"])["region"],
}
with open("report.json", "w") as f:
    json.dump(report, f, indent=2)
    f.write("\n")
PY
