#!/bin/sh
# Reference solution: key on the normalised email, keep the newest record, sort by email.
set -eu
python3 - <<'PY'
import json

best = {}
for r in json.load(open("contacts.json")):
    email = r["email"].strip().lower()
    rec = {"name": " ".join(r["name"].split()), "email": email, "phone": r["phone"], "updated": r["updated"]}
    if email not in best or rec["updated"] > best[email]["updated"]:
        best[email] = rec
with open("contacts.clean.json", "w") as f:
    json.dump(sorted(best.values(), key=lambda r: r["email"]), f, indent=2)
    f.write("\n")
PY
