"""Plugin predicate: the archives were shifted and the live log compressed without loss.

The old live log's digest comes from the snapshot taken before the agent started, so the
check reads state, not anything the agent reports.
"""

import gzip
import hashlib


def _lines(ctx, rel):
    try:
        data = gzip.decompress(ctx.path(rel).read_bytes())
    except FileNotFoundError:
        return None, "missing"
    except (OSError, EOFError) as e:
        return None, f"not gzip: {e}"
    return data, None


def check(ctx):
    evidence = {}
    ok = True
    expected = {"logs/app.log.1.gz": ("current", 121), "logs/app.log.2.gz": ("1", 91), "logs/app.log.3.gz": ("2", 61)}
    for rel, (segment, count) in expected.items():
        data, err = _lines(ctx, rel)
        if data is None:
            evidence[rel] = err
            ok = False
            continue
        lines = data.decode("utf-8", "replace").splitlines()
        header = lines[0] if lines else ""
        good = header == f"# segment: {segment}" and len(lines) == count
        evidence[rel] = {"header": header, "lines": len(lines), "expected": [f"# segment: {segment}", count]}
        ok = ok and good
        if rel.endswith(".1.gz"):
            before = ctx.initial_digests.get("logs/app.log")
            after = hashlib.sha256(data).hexdigest()
            evidence["live_log_preserved"] = before == after
            ok = ok and before == after
    return ok, evidence
