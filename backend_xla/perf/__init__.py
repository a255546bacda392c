"""CPU performance building blocks for the ONNX→XLA converter.

``conv``: convolution formulations (im2col / shifted matmuls / Winograd / lax) in ONNX semantics.
``sharding``: split a jitted function's batch across all local CPU devices.
``maia``: a hand-built Maia (lc0 SE-residual) forward pass used to measure what is reachable.
See docs/performance.md for the measurements and the recommendation to the converter.
"""
