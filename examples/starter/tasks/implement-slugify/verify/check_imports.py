"""Plugin predicate: the module imports only standard-library modules.

Reads the file's syntax tree (never imports it: the agent's code is not run here).
"""

import ast
import sys


def check(ctx):
    rel = ctx.args.get("module", "textutil.py")
    try:
        tree = ast.parse(ctx.read_text(rel))
    except FileNotFoundError:
        return False, {"module": rel, "error": "missing"}
    except SyntaxError as e:
        return False, {"module": rel, "error": f"syntax error: {e}"}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    foreign = sorted(n for n in names if n not in sys.stdlib_module_names)
    return not foreign, {"module": rel, "imports": sorted(names), "not_stdlib": foreign}
