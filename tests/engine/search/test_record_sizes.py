"""The tree's record sizes that docs/architecture.md states are the compiled core's
(issue 40: docs that match the code)."""

from __future__ import annotations

import re

from conftest import REPO_ROOT

from engine.search.core.tree import EDGE, NODE


def test_the_architecture_map_states_the_real_node_and_edge_sizes():
    text = (REPO_ROOT / "docs" / "architecture.md").read_text()
    nodes = re.findall(r"(\d+)-byte nodes", text)
    edges = re.findall(r"(\d+)-byte edges", text)
    assert nodes and edges, "docs/architecture.md no longer states the record sizes"
    assert {int(n) for n in nodes} == {NODE.itemsize}, (nodes, NODE.itemsize)
    assert {int(e) for e in edges} == {EDGE.itemsize}, (edges, EDGE.itemsize)
