"""lc0's classic MCTS. :class:`Search` (search.py) runs it over the compiled core
(engine/search/core/); the rest of this package is what Python keeps: the options' record
(params.py), the limit (limit.py), the result (result.py), the rankings the reports read
(ranking.py, over the compiled core/stoppers.py ``rank_edges``) and the reports (report.py,
whose PUCT terms are the compiled selection's, core/view.py ``puct_terms``)."""

from engine.search.limit import Limit
from engine.search.params import SearchParams, from_options
from engine.search.report import stop_reason, verbose_stats
from engine.search.result import SearchResult, SearchStats, ThinkingInfo
from engine.search.search import Search
from engine.search.state import NNCache, PlayoutClock, WallClock

__all__ = [
    "Limit",
    "NNCache",
    "PlayoutClock",
    "Search",
    "SearchParams",
    "SearchResult",
    "SearchStats",
    "ThinkingInfo",
    "WallClock",
    "from_options",
    "stop_reason",
    "verbose_stats",
]
