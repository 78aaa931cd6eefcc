"""One verb adds a plug-in of any kind, ``assay.register(KIND, NAME, OBJ)``: what it adds is what
the kind's registry then resolves and what ``assay plugins`` lists as added; a wrong OBJ or an
unknown kind is refused with one clear error."""

from __future__ import annotations

from typing import Any, Literal

import pytest

import assay
from assay.cli.plugins import plugin_kinds
from assay.errors import UsageError
from assay.plugins import PLUGIN_KINDS, registry_of
from assay.registry import UnknownPlugin
from assay.spec.predicates import PredicateSpec


class DummySpec(PredicateSpec):
    kind: Literal["dummy_verb_kind"] = "dummy_verb_kind"


async def dummy_evaluate(spec: Any, ctx: Any) -> Any:
    raise NotImplementedError


class DummyBackend:
    name = "dummy-verb-backend"


def _objects() -> dict[str, tuple[str, Any]]:
    from assay.agents.base import AgentAdapter
    from assay.worlds.base import World

    class DummyProduct(AgentAdapter):  # never made: registered only
        pass

    class DummyWorld(World):
        pass

    return {"agent": ("dummy-verb-agent", lambda: None), "product": ("dummy-verb-product", DummyProduct),
            "sandbox": (DummyBackend.name, DummyBackend), "model": ("dummy-verb-model", lambda *a: None),
            "predicate": ("dummy_verb_kind", (DummySpec, dummy_evaluate)),
            "evaluator": ("dummy_verb_eval", dummy_evaluate), "world": ("dummy-verb-world", DummyWorld),
            "export": ("dummy-verb-export", lambda path, opts: "")}


def test_one_verb_registers_every_kind_and_plugins_lists_it() -> None:
    objects = _objects()
    assert set(objects) == set(PLUGIN_KINDS)  # the test covers every kind there is
    try:
        for kind, (name, obj) in objects.items():
            assert assay.register(kind, name, obj) is obj
            value = registry_of(kind).get(name if kind != "predicate" else name)
            assert value is (obj[0] if kind == "predicate" else obj), kind
        added = {row.kind: row.added for row in plugin_kinds()}
        for kind, (name, _) in objects.items():
            assert name in added[kind], (kind, added[kind])
        assert registry_of("evaluator").get("dummy_verb_kind") is dummy_evaluate  # a predicate is both halves
        assert registry_of("agent").get("dummy-verb-product") is objects["product"][1]  # a product is an agent
    finally:
        for kind, (name, _) in objects.items():
            registry_of(kind).unregister(name)
        registry_of("evaluator").unregister("dummy_verb_kind")
        registry_of("agent").unregister("dummy-verb-product")


@pytest.mark.parametrize("kind, name, obj, words", [
    ("sandbox", "other-name", DummyBackend, "its `name` is 'dummy-verb-backend'"),
    ("predicate", "dummy_verb_kind", dummy_evaluate, "a (PredicateSpec class, evaluator) pair"),
    ("predicate", "another_kind", (DummySpec, dummy_evaluate), "the spec's kind is 'dummy_verb_kind'"),
])
def test_a_wrong_object_is_refused_naming_what_it_must_be(kind: str, name: str, obj: Any, words: str) -> None:
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        assay.register(kind, name, obj)
    assert name not in registry_of(kind).names()


def test_an_unknown_kind_is_the_one_unknown_name_error() -> None:
    with pytest.raises(UnknownPlugin) as caught:
        assay.register("widget", "x", object())
    assert "widget" in str(caught.value) and "agent" in str(caught.value)
