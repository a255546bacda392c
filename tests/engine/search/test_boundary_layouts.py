"""The numba boundary's packed arrays are read and written by name (issue 67): each has one
layout table (engine/search/core/layout.py), its index constants are read from it, and no
source indexes one of them with a bare number."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from engine.search.core import backup, gather, minibatch, stoppers
from engine.search.core.layout import Layout

ROOT = Path(__file__).resolve().parents[3]
PACKED = {"info", "meta", "counters", "limits", "frame_meta", "walk_info", "summary"}
"""The names the packed boundary arrays go by (``walk.info``, ``batch.meta``, a tally's
``counters``, a gather's ``limits``, prefetch's ``frame_meta``...)."""


def bare_indices(source: str) -> list[str]:
    """``name[3]`` or ``x.name[i, 3]`` for a name of :data:`PACKED`: the subscripts that
    index a packed array with a number, not a layout's constant."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Subscript):
            continue
        base = node.value
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if name not in PACKED:
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        last = parts[-1]
        if isinstance(last, ast.UnaryOp):
            last = last.operand
        if isinstance(last, ast.Constant) and isinstance(last.value, int):
            found.append(ast.unparse(node))
    return found


def test_the_checker_finds_a_bare_index():
    assert bare_indices("batch.meta[3] = 1\nx = walk.info[0]\ny = frame_meta[level, 2]") == [
        "batch.meta[3]",
        "walk.info[0]",
        "frame_meta[level, 2]",
    ]
    assert bare_indices("batch.meta[REQUESTS] += 1\nbatch.meta[:] = 0\nz = out[0]") == []


def test_no_source_indexes_a_packed_array_by_number():
    sources = sorted((ROOT / "engine").rglob("*.py")) + sorted((ROOT / "bin").rglob("*.py"))
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sources
        if (found := bare_indices(path.read_text()))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "layout, constants",
    [
        (
            gather.WALK_INFO,
            (gather.GAME_LEN, gather.FORMAT, gather.FILL, gather.TB_PIECES, gather.ROOT_IN_TB),
        ),  # fmt: skip
        (
            gather.BATCH_META,
            (
                gather.REQUESTS,
                gather.COLLISIONS,
                gather.OUT_OF_ORDER_DONE,
                gather.NO_ROOM,
                gather.PREFETCHED,
                gather.SPREAD,
            ),
        ),  # fmt: skip
        (backup.COUNTERS, (backup.PLAYOUTS, backup.DEPTH_SUM, backup.MAX_DEPTH, backup.TB_HITS)),
        (
            stoppers.ROOT_SUMMARY,
            (
                stoppers.BEST,
                stoppers.FIRST_N,
                stoppers.SECOND_N,
                stoppers.MOVES,
                stoppers.LOST,
                stoppers.WON,
                stoppers.MATE,
            ),
        ),  # fmt: skip
        (
            minibatch.GATHER_LIMITS,
            (
                minibatch.BATCH_SIZE,
                minibatch.MAX_OOO,
                minibatch.COLLISIONS_LEFT,
                minibatch.KEEP_COLLISIONS,
            ),
        ),  # fmt: skip
    ],
)
def test_each_layouts_constants_are_its_slots_in_order(layout: Layout, constants):
    assert constants == tuple(range(layout.size))
    packed = layout.pack(**{name: 10 + i for i, name in enumerate(layout.names)})
    assert packed.dtype == np.int64 and layout.read(packed) == {
        name: 10 + i for i, name in enumerate(layout.names)
    }


def test_a_layout_refuses_wrong_names_saying_what_it_expected():
    layout = Layout("demo", "A B C")
    with pytest.raises(
        ImportError, match=r"demo: expected slots \('A', 'B', 'C'\), got \('A', 'C', 'B'\)"
    ):
        layout.indices("A C B")
    with pytest.raises(TypeError, match=r"missing \['C'\], unknown \['D'\]"):
        layout.pack(A=1, B=2, D=3)
    with pytest.raises(ImportError, match="named twice"):
        Layout("twice", "A A")
    assert gather.new_batch(4).meta.shape == (gather.BATCH_META.size,)
