"""``bin/perf/bench --trace``: each search's timeline (engine/search/timeline.py) as a CSV, one row a
batch, and a summary of how much the search and the network overlapped."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from engine.search.timeline import PHASES, BatchTimes, busy_seconds, overlap_seconds

COLUMNS = ("search", "batch", "rows") + tuple(
    f"{phase}_{edge}_ms" for phase in PHASES for edge in ("start", "end")
)


class TraceWriter:
    """Appends every search's batches to one CSV file; keeps what the summary needs."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = self.path.open("w", newline="")
        self._csv = csv.writer(self._file)
        self._csv.writerow(COLUMNS)
        self.searches: list[tuple[str, list[BatchTimes]]] = []

    def add(self, name: str, batches: list[BatchTimes]) -> None:
        for b in batches:
            times: list[str] = []
            for span in (b.gather, b.device, b.backup):
                times += ["", ""] if span is None else [f"{1000 * t:.3f}" for t in span]
            self._csv.writerow([name, b.batch, b.rows, *times])
        self.searches.append((name, batches))

    def close(self) -> None:
        self._file.close()

    def summary(self) -> list[str]:
        """One line a search: batches, rows, and the shares of its time that the device was
        busy, that the search thread gathered or backed up, and that both ran at once."""
        lines = [
            f"Timeline ({self.path}): a search's wall time from its first gather to its last backup"
        ]
        for name, batches in self.searches:
            spans = {p: [s for b in batches if (s := getattr(b, p)) is not None] for p in PHASES}
            every = [t for p in PHASES for s in spans[p] for t in s]
            if not every:
                continue
            wall = max(every) - min(every)
            search = spans["gather"] + spans["backup"]
            rows = [b.rows for b in batches]
            lines.append(
                f"  {name}: {len(batches)} batches, rows median {statistics.median(rows):.0f} "
                f"mean {statistics.fmean(rows):.0f}; device busy "
                f"{busy_seconds(spans['device']) / wall:.0%}, search thread busy "
                f"{busy_seconds(search) / wall:.0%}, both at once "
                f"{overlap_seconds(spans['device'], search) / wall:.0%} of {1000 * wall:.0f} ms"
            )
        return lines
