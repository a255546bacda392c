"""Benchmarks and developer tools behind the bin/ scripts (``bin/perf/bench``, ``bin/dev/make-bt-net``,
``bin/perf/ucilatency``, ``bin/perf/treemem``, ``bin/onnx2hlo``, ...): not installed, and nothing at run
time imports this package (pyproject.toml's import contract). The scripts import it from bin/ (those
in bin/perf/, bin/check/ and bin/dev/ through their folder's _venv.py).

``searchbench``: ``bin/perf/bench``'s searches and figures. ``btnet``: random transformer networks in
lc0's format. ``uci_pipe``: an engine process driven through its UCI pipe. ``nettools``: ``bin/onnx2hlo`` and ``bin/describenet``. (The XLA
prototypes of a compiled search core, batched legal moves and the tree as arrays, were deleted
when the numba core replaced them: ``engine/search/core/``.)
"""
