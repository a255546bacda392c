"""Code behind the bin/ scripts (``bin/dev/make-bt-net``, ``bin/onnx2hlo``, ``bin/check/soak``, the
UCI-driving benchmarks in bin/perf/, ...): not installed, and nothing at run time imports this
package (pyproject.toml's import contract). The scripts import it from bin/ (those in bin/perf/,
bin/check/ and bin/dev/ through their folder's _venv.py).

``uci_pipe``: an engine process driven through its UCI pipe, the tools' one driver. ``btnet``:
random transformer networks in lc0's format. ``nettools``: ``bin/onnx2hlo`` and
``bin/describenet``. ``soak``, ``analysis_soak``, ``fidelity``: ``bin/check``'s.
"""
