"""Small built-in backends (no JAX): importing this package registers them."""

from engine.backends import random as _random  # noqa: F401  (registers "random")
