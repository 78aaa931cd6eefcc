"""Command agents for the process-fault tests: a Python script as ``{home}/agent.py`` with the
world tools, written as the agent YAML the runner loads."""

from __future__ import annotations

import textwrap

#: the script lines that book the example's entry under its idempotency key (``book()`` -> answer)
BOOK = '''\
def book():
    url, key = os.environ["ASSAY_TOOLS_URL"].rstrip("/"), os.environ["ASSAY_TOOLS_KEY"]
    entry = {"date": "2026-04-02", "amount": 58, "currency": "CNY", "category": "dining",
             "merchant": "Harbor Dumpling House", "idempotency_key": "lunch-2026-04-02"}
    req = urllib.request.Request(url + "/call", data=json.dumps({"name": "ledger.record_entry",
                                                                 "arguments": entry}).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())
'''


def command_agent(name: str, script: str) -> str:
    """The agent YAML running ``script`` (Python source, not indented) with ``python3``."""
    return (f'name: {name}\nkind: command\nversion: "1.0"\ntools: ["ledger.*"]\n'
            'command: ["python3", "{home}/agent.py"]\nfiles:\n  agent.py: |\n' + textwrap.indent(script, "    "))
