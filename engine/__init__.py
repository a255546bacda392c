"""xlazero engine: UCI loop, search, encoding and time management.

Importing it changes nothing global: the process's set-up (numba's cache folder and registries,
XLA's devices) is :func:`engine.startup.configure`'s, which the program, the tests and the tools
call (tests/engine/test_startup.py checks both).
"""

__version__ = "0.1.0"
