#!/bin/sh
# Generates the three service logs of the incident window (deterministic; no randomness).
set -eu
mkdir -p logs
python3 - <<'PY'
def ts(sec):
    return f"2024-06-11T09:{sec // 60:02d}:{sec % 60:02d}Z"

api, worker, db = [], [], []
FAIL = 14 * 60 + 7  # first failed authentication
for s in range(0, 20 * 60, 9):
    ok = s < FAIL + 2
    status = 200 if ok else 503
    api.append(f"{ts(s)} INFO  api: GET /orders/{1000 + s} status={status} ms={(s * 13) % 120 + 8 if ok else 30001}")
    if not ok and s % 45 == 0:
        api.append(f"{ts(s)} ERROR api: upstream worker pool unavailable, returning 503")
for s in range(0, 20 * 60, 20):
    if s < FAIL:
        worker.append(f"{ts(s)} INFO  worker: processed batch size={(s // 20) % 7 + 3}")
    else:
        worker.append(f"{ts(s)} ERROR worker: db connect failed: FATAL: password authentication failed for user \"orders\"")
        worker.append(f"{ts(s)} WARN  worker: connection pool exhausted (0/16 healthy), backing off")
for s in range(0, 20 * 60, 30):
    db.append(f"{ts(s)} LOG   db: checkpoint complete: wrote {(s // 30) % 50 + 10} buffers")
api.insert(34, f"{ts(305)} WARN  api: disk usage on /var/log at 86% (threshold 85%)")
api.insert(57, f"{ts(488)} WARN  api: lookup metrics.internal: temporary failure in name resolution, retrying")
api.insert(58, f"{ts(490)} INFO  api: lookup metrics.internal succeeded after 1 retry")
worker.insert(20, f"{ts(401)} INFO  worker: memory usage 71% of limit")
db.append(f"{ts(12 * 60 + 30)} LOG   db: received SIGHUP, reloading configuration files")
db.append(f"{ts(12 * 60 + 31)} LOG   db: role \"orders\" password changed by secret rotation (vault lease db/orders v8)")
for k in range(30):
    s = FAIL + 20 * k
    db.append(f"{ts(s)} FATAL db: password authentication failed for user \"orders\" (connection from 10.0.3.7)")
for lines in (api, worker, db):
    lines.sort()
for name, lines in (("api", api), ("worker", worker), ("db", db)):
    with open(f"logs/{name}.log", "w") as f:
        f.write("\n".join(lines) + "\n")
PY
