"""PGN files as the tools read them: plain, or gzip-compressed (``.pgn.gz``, as the match
records in nets/matches/ are stored)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TextIO


def open_pgn(path: str | Path) -> TextIO:
    """``path`` opened for reading text (UTF-8, a byte-order mark skipped), gunzipped when its
    name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def is_pgn(path: str | Path) -> bool:
    return str(path).endswith((".pgn", ".pgn.gz"))
