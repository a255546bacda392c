"""CPU benchmarks for the ONNX→XLA converter (``bin/convbench``); nothing at run time imports this
package.

``maia``: a hand-built Maia (lc0 SE-residual) forward pass used to measure what is reachable.
``bench``: the tables of docs/performance.md; ``timing``: round-robin timing; ``conv``: FLOP counts.
The conv formulations they measure are run-time code (:mod:`backend_xla.ops.conv_methods`), as is
the batch split over host devices (:mod:`backend_xla.devices`).
"""
