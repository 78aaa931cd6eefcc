"""One registry mechanism: third-party extensions never hide built-ins, names are never taken
silently, and entry points work for every kind (agents, products, sandbox backends, model
backends, predicates, worlds).

Each check runs in a fresh interpreter, so "registered before the built-ins loaded" really is
before: nothing of assay's registries has been read in that process yet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.registry import Registry, RegistryError

ROOT = Path(__file__).resolve().parents[1]

BUILTINS = {
    "agents": {"nop", "oracle", "reference", "pi", "openclaw", "hermes", "dsh"},
    "products": {"pi", "openclaw", "hermes", "dsh"},
    "sandboxes": {"host", "bwrap"},
    "model_backends": {"scripted", "replay", "upstream", "local"},
    "predicates": {"file_exists", "pytest", "command", "world_rows", "trajectory", "security"},
    "worlds": {"ledger", "tickets", "outbox", "user"},
}

#: prints {kind: sorted names} after the given prelude ran
LISTING = """
import json
from assay.agents.registry import AGENTS
from assay.agents.products import PRODUCTS
from assay.sandbox.registry import BACKENDS
from assay.gateway.backends.base import MODEL_BACKENDS
from assay.spec.predicates import PREDICATE_SPECS
from assay.verify.registry import EVALUATORS
from assay.worlds.registry import WORLDS
print(json.dumps({"agents": AGENTS.names(), "products": PRODUCTS.names(), "sandboxes": BACKENDS.names(),
                  "model_backends": MODEL_BACKENDS.names(), "predicates": PREDICATE_SPECS.names(),
                  "evaluators": EVALUATORS.names(), "worlds": WORLDS.names()}))
"""

#: third-party registrations made first thing in a fresh process, one per kind
EARLY_REGISTRATIONS = """
from typing import Literal
from assay.agents.builtin import NopAgent
from assay.agents.registry import register_agent, register_product
from assay.sandbox.host import HostBackend
from assay.sandbox.registry import register_sandbox_backend
from assay.gateway.backends.scripted import ScriptedBackend
from assay.gateway.backends.base import register_model_backend
from assay.spec.predicates import PredicateSpec
from assay.verify.context import Outcome
from assay.verify.registry import register_predicate
from assay.worlds.outbox import Outbox
from assay.worlds.registry import world

class Mine(NopAgent):
    name = "mine"

class MyProduct(NopAgent):
    name = "myproduct"

class MyBackend(HostBackend):
    name = "mybox"

class AlwaysTrue(PredicateSpec):
    kind: Literal["always_true"] = "always_true"

async def always_true(spec, ctx):
    return Outcome(True, {})

register_agent("mine", Mine)
register_product("myproduct", MyProduct)
register_sandbox_backend(MyBackend)
register_model_backend("mymodel", ScriptedBackend)
register_predicate(AlwaysTrue, always_true)

@world("mailroom")
class Mailroom(Outbox):
    pass
"""


def _run(code: str, extra_path: Path | None = None) -> dict[str, list[str]]:
    path = [str(ROOT / "src")] + ([str(extra_path)] if extra_path else [])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_builtins_present(names: dict[str, list[str]]) -> None:
    for kind, expected in BUILTINS.items():
        assert expected <= set(names[kind]), f"{kind}: built-ins hidden: {sorted(expected - set(names[kind]))}"
    assert set(names["predicates"]) == set(names["evaluators"]), "every predicate kind has exactly one evaluator"


def test_registering_before_builtins_load_hides_nothing() -> None:
    names = _run(EARLY_REGISTRATIONS + LISTING)
    _assert_builtins_present(names)
    assert "mine" in names["agents"] and "myproduct" in names["agents"] and "myproduct" in names["products"]
    assert "mybox" in names["sandboxes"]
    assert "mymodel" in names["model_backends"]
    assert "always_true" in names["predicates"] and "always_true" in names["evaluators"]
    assert "mailroom" in names["worlds"]


def test_fresh_process_lists_every_builtin() -> None:
    _assert_builtins_present(_run(LISTING))


@pytest.mark.parametrize("code", [
    "from assay.agents.registry import register_agent\nfrom assay.agents.builtin import NopAgent\n"
    "register_agent('oracle', NopAgent)",
    "from assay.sandbox.registry import register_sandbox_backend\nfrom assay.sandbox.host import HostBackend\n"
    "class B(HostBackend):\n    name = 'bwrap'\nregister_sandbox_backend(B)",
    "from assay.gateway.backends.base import register_model_backend\nfrom assay.gateway.backends.replay import ReplayBackend\n"
    "register_model_backend('scripted', ReplayBackend)",
    "from assay.worlds.registry import world\nfrom assay.worlds.outbox import Outbox\n"
    "@world('ledger')\nclass L(Outbox):\n    pass",
    "from typing import Literal\nfrom assay.spec.predicates import PredicateSpec\n"
    "from assay.verify.registry import register_predicate\n"
    "class P(PredicateSpec):\n    kind: Literal['pytest'] = 'pytest'\n"
    "async def ev(s, c):\n    return None\nregister_predicate(P, ev)",
])
def test_a_builtin_name_is_never_taken_silently(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode != 0
    assert "RegistryError" in proc.stderr and "built-in" in proc.stderr and "fix:" in proc.stderr


def _plugin_distribution(root: Path) -> Path:
    """A real installed distribution (dist-info with entry_points.txt) declaring one plugin per group."""
    site = root / "site"
    (site / "demo_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "demo_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 1.0\n")
    (site / "demo_plugin-1.0.dist-info" / "entry_points.txt").write_text(textwrap.dedent("""\
        [assay.agents]
        epagent = demo_plugin:EpAgent
        [assay.products]
        epproduct = demo_plugin:EpAgent
        [assay.sandboxes]
        epbox = demo_plugin:EpBackend
        [assay.gateway_backends]
        epmodel = demo_plugin:EpModel
        [assay.predicates]
        ep_check = demo_plugin:EP_CHECK
        [assay.worlds]
        epworld = demo_plugin:EpWorld
        """))
    (site / "demo_plugin.py").write_text(textwrap.dedent("""\
        from typing import Literal
        from assay.agents.builtin import NopAgent
        from assay.gateway.backends.scripted import ScriptedBackend
        from assay.sandbox.host import HostBackend
        from assay.spec.predicates import PredicateKind, PredicateSpec
        from assay.verify.context import Outcome
        from assay.worlds.outbox import Outbox

        class EpAgent(NopAgent):
            name = "epagent"

        class EpBackend(HostBackend):
            name = "epbox"

        class EpModel(ScriptedBackend):
            name = "epmodel"

        class EpWorld(Outbox):
            kind = "epworld"

        class EpCheck(PredicateSpec):
            kind: Literal["ep_check"] = "ep_check"
            path: str

        async def evaluate(spec, ctx):
            return Outcome((ctx.work / spec.path).exists(), {"path": spec.path})

        EP_CHECK = PredicateKind(EpCheck, evaluate)
        """))
    return site


def test_entry_points_add_to_every_kind_and_a_predicate_is_declared_whole(tmp_path: Path) -> None:
    site = _plugin_distribution(tmp_path)
    names = _run(LISTING, extra_path=site)
    _assert_builtins_present(names)
    for kind, name in (("agents", "epagent"), ("products", "epproduct"), ("sandboxes", "epbox"),
                       ("model_backends", "epmodel"), ("predicates", "ep_check"), ("evaluators", "ep_check"),
                       ("worlds", "epworld")):
        assert name in names[kind], (kind, names[kind])
    # the one entry point makes the kind loadable in a task file and evaluable by the verifier
    loaded = _run("import json\nfrom assay.spec.task import TaskSpec\nfrom assay.verify.registry import get_evaluator\n"
                  "t = TaskSpec.model_validate({'id': 'x', 'category': 'c', 'predicates': "
                  "[{'id': 'p', 'kind': 'ep_check', 'path': 'a.txt'}]})\n"
                  "print(json.dumps({'kind': [t.predicates[0].kind], "
                  "'evaluator': [get_evaluator('ep_check').__module__]}))", extra_path=site)
    assert loaded == {"kind": ["ep_check"], "evaluator": ["demo_plugin"]}
    # and a published world is declared by a task: the task loader finds its model through the
    # entry point, in a process that has imported nothing of assay.worlds before
    declared = _run("import json, sys\nfrom assay.spec.task import TaskSpec\n"
                    "before = sorted(m for m in sys.modules if m.startswith('assay.worlds'))\n"
                    "t = TaskSpec.model_validate({'id': 'x', 'category': 'c', 'predicates': "
                    "[{'id': 'p', 'kind': 'file_exists', 'path': 'a'}], 'worlds': {'epworld': {'contacts': ['a@b.example']}}})\n"
                    "print(json.dumps({'before': before, 'contacts': t.worlds.epworld.contacts}))", extra_path=site)
    assert declared == {"before": [], "contacts": ["a@b.example"]}


def test_registry_unit_behaviour() -> None:
    reg: Registry[int] = Registry("number", "assay.test-none", {"one": 1, "lazy": "math:pi"})
    assert reg.get("lazy") == pytest.approx(3.14159, abs=1e-4)
    reg.register("two", 2)
    assert reg.names() == ["lazy", "one", "two"]
    with pytest.raises(RegistryError, match="built-in"):
        reg.register("one", 11)
    reg.register("one", 11, replace=True)
    assert reg.get("one") == 11
    with pytest.raises(RegistryError, match="already registered"):
        reg.register("two", 22)
    with pytest.raises(RegistryError, match="unknown number 'three'; known: lazy, one, two"):
        reg.get("three")
