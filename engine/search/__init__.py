"""lc0-style classic MCTS. ``Search`` is the search over the compiled core
(engine/search/core/); ``PySearch`` is the Python search it replaces (engine/search/search.py),
kept as the reference of the core's tests until its deletion."""

from engine.search.cache import CachedEval, NNCache
from engine.search.core.search import CoreSearch as Search
from engine.search.limit import Limit
from engine.search.node import Node, Terminal
from engine.search.params import SearchParams, from_options
from engine.search.report import ThinkingInfo
from engine.search.search import Search as PySearch
from engine.search.search import SearchResult, collector_paused
from engine.search.state import SearchState, SearchStats

__all__ = [
    "CachedEval",
    "Limit",
    "NNCache",
    "Node",
    "PySearch",
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
