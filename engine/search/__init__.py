"""lc0-style classic MCTS (see engine/search/search.py)."""

from engine.search.cache import CachedEval, NNCache
from engine.search.node import Node, Terminal
from engine.search.params import SearchParams, from_options
from engine.search.report import SearchStats, ThinkingInfo
from engine.search.search import Limits, Search, SearchResult, collector_paused

__all__ = ["CachedEval", "Limits", "NNCache", "Node", "Search", "SearchParams", "SearchResult", "SearchStats",
           "Terminal", "ThinkingInfo", "collector_paused", "from_options"]
