"""lc0-style classic MCTS (see engine/search/search.py)."""

from engine.search.cache import CachedEval, NNCache
from engine.search.limit import Limit
from engine.search.node import Node, Terminal
from engine.search.params import SearchParams, from_options
from engine.search.report import ThinkingInfo
from engine.search.search import Search, SearchResult, collector_paused
from engine.search.state import SearchState, SearchStats

__all__ = [
    "CachedEval",
    "Limit",
    "NNCache",
    "Node",
    "Search",
    "SearchParams",
    "SearchResult",
    "SearchState",
    "SearchStats",
    "Terminal",
    "ThinkingInfo",
    "collector_paused",
    "from_options",
]
