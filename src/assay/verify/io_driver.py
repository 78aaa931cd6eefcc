"""The ``call`` driver of ``io_cases``: import ``module`` from the workspace, call ``function``
with the case's arguments (JSON on stdin) and print the outcome as one JSON line.

Invoked as ``python -I -B …/io_driver.py MODULE FUNCTION`` (by file, without importing the assay
package: one start-up per case stays cheap) with the workspace as the
current directory. The result goes to a duplicate of stdout taken before the agent's module is
imported; the module's own prints go to stderr. Whatever it prints, it is only an output: the
expected value is compared by the harness, outside this process.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

MARK = "@@ASSAY-IO@@"


def main(argv: list[str]) -> int:
    module, function = argv
    case = json.loads(sys.stdin.readline() or "{}")
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the code under test's prints land in stderr
    sys.path.append(os.getcwd())
    try:
        value = getattr(importlib.import_module(module), function)(*case.get("args", []), **case.get("kwargs", {}))
        line = {"returns": value}
    except BaseException as e:  # noqa: BLE001 - the exception is the outcome being judged
        line = {"raises": type(e).__name__, "message": str(e)[:500]}
    try:
        text = json.dumps(line, default=repr)
    except (TypeError, ValueError) as e:
        text = json.dumps({"unserialisable": f"{type(e).__name__}: {e}"[:500]})
    out.write(MARK + text + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
