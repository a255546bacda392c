"""Training of the networks in ``nets/`` (``bin/dev/train-net``; docs/training.md).

A tool of the repository, not of the engine: nothing in ``engine`` or ``backend_xla`` imports it,
it is not installed with them, and it reaches them through their public functions only.
"""
