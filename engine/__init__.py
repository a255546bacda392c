"""xlazero engine: UCI loop, search, encoding and time management."""

__version__ = "0.1.0"
