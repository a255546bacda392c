"""The networks the project ships, and (``nets.training``) the code that makes them.

Not part of the installed engine: pyproject's package find takes ``engine*`` and ``backend_xla*``
only, so ``nets`` imports from a checkout (``bin/`` scripts and pytest put the repository root
on ``sys.path``).
"""
