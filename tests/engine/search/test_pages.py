"""engine/search/pages.py: the pages past an array's used part are backed ahead of the search,
without touching what they hold (the kernel's own view: the process's resident memory)."""

from __future__ import annotations

import mmap
import sys

import numpy as np
import pytest

from engine.search.pages import FIRST_USE, WINDOW, PagesAhead


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _wait(pages: PagesAhead) -> None:
    assert pages._executor is not None
    pages._executor.submit(lambda: None).result(timeout=30)  # one thread: the work before is done


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise populate: Linux only")
def test_the_window_past_the_used_part_becomes_resident_and_keeps_its_contents():
    pages = PagesAhead()
    if pages._madvise is None:
        pytest.skip("no madvise here")
    # Fresh pages of its own, not resident until written (np.zeros may reuse heap memory that
    # earlier tests freed, resident already).
    array = np.frombuffer(mmap.mmap(-1, 64 << 20), np.uint8)
    used = 3 << 20
    array[:used] = 7
    before = _resident_bytes()
    pages.ahead(array, used)
    _wait(pages)
    if pages._madvise is None:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")
    grown = _resident_bytes() - before
    assert grown >= WINDOW // 2, grown  # the window (a huge page may round it up)
    assert grown <= 4 * WINDOW, grown  # and not the whole array
    assert (array[:used] == 7).all() and not array[used:].any()
    # Shown again with the same use: nothing more to do; further on, the next window.
    assert pages.ahead(array, used) is None and len(pages._ready) == 1
    pages.ahead(array, used + WINDOW)
    _wait(pages)
    assert _resident_bytes() - before >= grown + WINDOW // 2
    pages.close()
    pages.ahead(array, used + 3 * WINDOW)  # closed: no thread again
    assert pages._executor is None


def test_an_array_used_to_its_end_needs_nothing():
    pages = PagesAhead()
    array = np.zeros(1 << 20, np.uint8)
    pages.ahead(array, len(array))
    assert pages._executor is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise populate: Linux only")
def test_nothing_is_made_ready_before_the_first_use():
    """A short search's arrays (less than FIRST_USE in use) get no pages past their use: each
    fresh page costs the kernel milliseconds that a short search never repays."""
    pages = PagesAhead()
    if pages._madvise is None:
        pytest.skip("no madvise here")
    array = np.frombuffer(mmap.mmap(-1, 16 << 20), np.uint8)
    before = _resident_bytes()
    pages.ahead(array, FIRST_USE - 1)
    assert pages._executor is None and _resident_bytes() - before < WINDOW // 2
    pages.ahead(array, FIRST_USE)
    _wait(pages)
    if pages._madvise is None:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")
    assert _resident_bytes() - before >= WINDOW // 2
    pages.close()
