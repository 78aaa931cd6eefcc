"""``assay-tool``: the world tools as a command, for agents that only have a shell.

Standard library only: the session writes this file, with a ``#!/usr/bin/env python3`` line,
into the agent's home as ``bin/assay-tool`` (its path is in ``$ASSAY_TOOL``), so it runs with
any Python 3 inside the sandbox. It reads ``ASSAY_TOOLS_URL`` and ``ASSAY_TOOLS_KEY`` (or, when a
shell scrubbed them, ``assay-tool.json`` beside it).

    assay-tool list
    assay-tool ledger.record_entry --json '{"date": "2026-05-01", "amount": 12.5, ...}'
    assay-tool tickets.read_ticket id=T-1

Prints the result as JSON. Exit 0: the call succeeded; 1: the world or policy said no;
2: bad usage or the tool service cannot be reached.
"""

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

SHIM_SOURCE_PATH = Path(__file__)
TIMEOUT_S = 3600  # an approval may keep a call waiting; the harness's watchdog bounds the attempt


def _die(msg):
    sys.stderr.write("assay-tool: " + msg + "\n")
    raise SystemExit(2)


def _settings():
    """URL and key from the environment, else from ``assay-tool.json`` next to this file (written
    by adapters whose agent scrubs key-like names from its shell's environment, e.g. DSH)."""
    url, key = os.environ.get("ASSAY_TOOLS_URL", ""), os.environ.get("ASSAY_TOOLS_KEY", "")
    if not (url and key):
        try:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "assay-tool.json")) as f:
                saved = json.load(f)
            url, key = url or saved.get("url", ""), key or saved.get("key", "")
        except (OSError, ValueError, AttributeError):
            pass
    return url.rstrip("/"), key


def _request(path, body=None):
    url, key = _settings()
    if not url:
        _die("ASSAY_TOOLS_URL is not set (no world service in this attempt)")
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="GET" if body is None else "POST", headers={
        "Authorization": "Bearer " + key, "Content-Type": "application/json", "X-Assay-Channel": "shim"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        _die("HTTP %s: %s" % (e.code, e.read().decode(errors="replace")[:500]))
    except (urllib.error.URLError, OSError) as e:
        _die("cannot reach the tool service: %s" % (e,))


def _parse_args(rest):
    if not rest:
        return {}
    if rest[0] == "--json":
        if len(rest) != 2:
            _die("--json takes exactly one argument")
        value = json.loads(rest[1])
        if not isinstance(value, dict):
            _die("--json must be a JSON object")
        return value
    out = {}
    for item in rest:
        if "=" not in item:
            _die("arguments are NAME=VALUE or --json '{...}', got %r" % (item,))
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__ or "")
        return 0 if argv else 2
    if argv[0] == "list":
        json.dump(_request("/tools"), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    try:
        args = _parse_args(argv[1:])
    except ValueError as e:
        _die("bad JSON: %s" % (e,))
    reply = _request("/call", {"name": argv[0], "arguments": args})
    json.dump(reply.get("result") if reply.get("ok") else {"error": reply.get("error")}, sys.stdout,
              ensure_ascii=False)
    sys.stdout.write("\n")
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
