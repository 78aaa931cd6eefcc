"""YAML from files assay did not write (suites, imported tasks, calibration and case files),
loaded with its alias expansion bounded.

PyYAML builds an aliased node once and shares it, so a "billion laughs" (nine lists of nine
references to the one before: 387 million strings from 1 KB) parses at once; everything that
walks the result afterwards (validation, digests, JSON) walks the whole expansion and does not
end. A self-referring alias builds a cyclic structure that nothing downstream can walk either.
Both are refused here, before anything is built, as malformed YAML (:class:`YamlTooLarge` is a
``yaml.YAMLError``, so every reader's handler of bad YAML names the file and the line). A
document nested past Python's recursion limit is refused the same way (PyYAML's composer
recurses per level).
"""

from __future__ import annotations

from typing import Any

import yaml

#: nodes a document may expand to, every alias counted as a copy of what it names (a task.yaml
#: has hundreds; the largest real documents assay reads have tens of thousands)
MAX_NODES = 1_000_000


class YamlTooLarge(yaml.MarkedYAMLError):
    """A YAML document whose aliases expand past :data:`MAX_NODES`, refer to themselves, or
    that nests too deep to be read."""

    def __init__(self, problem: str, mark: yaml.Mark | None = None):
        super().__init__(problem=problem, problem_mark=mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node, max_nodes: int = MAX_NODES) -> int:
    """The number of nodes ``root`` expands to (each alias counted as a copy), computed once per
    shared node; :class:`YamlTooLarge` past ``max_nodes`` or on an alias inside what it names."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        nid = id(node)
        if finished:
            on_path.discard(nid)
            total = 1 + sum(size[id(c)] for c in _children(node))
            if total > max_nodes:
                raise YamlTooLarge(f"its aliases expand to more than {max_nodes:,} nodes (an alias bomb?); "
                                   "write the values out instead of nesting aliases", node.start_mark)
            size[nid] = total
            continue
        if nid in size:
            continue
        on_path.add(nid)
        stack.append((node, True))
        for child in _children(node):
            cid = id(child)
            if cid in on_path:
                raise YamlTooLarge("an alias refers to itself (a recursive structure cannot be read)",
                                   child.start_mark)
            if cid not in size:
                stack.append((child, False))
    return size[id(root)]


def load_yaml(text: str | bytes, *, max_nodes: int = MAX_NODES) -> Any:
    """``yaml.safe_load`` of ``text``, with the expansion of its aliases bounded (see above)."""
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlTooLarge("nested too deep to be read") from None
        if node is None:
            return None
        check_expansion(node, max_nodes)
        try:
            return loader.construct_document(node)
        except RecursionError:
            raise YamlTooLarge("nested too deep to be read", node.start_mark) from None
    finally:
        loader.dispose()


__all__ = ["MAX_NODES", "YamlTooLarge", "check_expansion", "load_yaml"]
