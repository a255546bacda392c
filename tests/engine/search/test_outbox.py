"""engine/search/outbox.py: a run's lines, queued under the nodes lock and made and sent once it is
let go, leave in the order they were queued whichever thread sends them. Several threads queue
numbered reports under one lock (as the nodes lock) and flush without it; the sending callback
takes a little time, so without the Outbox's sending lock two flushers pop two reports in order
and send them the other way round (seen failing so). In a search with two threads, one thread
goes on searching while the other makes a report."""

from __future__ import annotations

import threading
import time

import chess
import pytest

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search import run as search_run
from engine.search.outbox import Outbox


@pytest.mark.parametrize("wait", [True, False])
def test_lines_leave_in_the_order_made_whichever_thread_sends_them(wait):
    outbox = Outbox()
    nodes = threading.Lock()  # the nodes lock: reports are made and queued under it
    sent: list[int] = []
    made = [0]

    def send(number: int) -> None:
        if number % 3 == 0:
            time.sleep(0.0002)  # a slow write to the GUI's pipe
        sent.append(number)

    def search_thread() -> None:
        for _ in range(300):
            with nodes:
                made[0] += 1
                number = made[0]
                if number % 2:
                    outbox.put(send, number)
                else:  # made when sent
                    outbox.later(send, lambda number=number: number)
            outbox.flush(wait=wait)

    threads = [threading.Thread(target=search_thread) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outbox.flush()
    assert len(sent) == 1200
    assert sent == sorted(sent), [a for a, b in zip(sent, sent[1:], strict=False) if a > b][:5]


def test_a_flush_that_finds_another_sending_leaves_its_lines_to_it():
    """``flush(wait=False)`` while another thread sends returns at once (a search thread does
    not wait for another's writing); the sender sends its lines after its own, in order."""
    outbox = Outbox()
    sending, go_on = threading.Event(), threading.Event()
    sent: list[int] = []

    def slow(number: int) -> None:
        sending.set()
        go_on.wait(2.0)
        sent.append(number)

    outbox.put(slow, 1)
    sender = threading.Thread(target=outbox.flush)
    sender.start()
    assert sending.wait(2.0)
    outbox.later(sent.append, lambda: 2)
    start = time.monotonic()
    outbox.flush(wait=False)
    assert time.monotonic() - start < 1.0, "waited for the other thread's sending"
    assert sent == []
    go_on.set()
    sender.join(2.0)
    assert sent == [1, 2]


def test_a_failing_send_is_the_flushers_and_the_rest_stay_queued():
    outbox = Outbox()
    sent: list[str] = []

    def broken(_lines: object) -> None:
        raise BrokenPipeError("the GUI went away")

    outbox.put(broken, "first")
    outbox.put(sent.append, "second")
    try:
        outbox.flush()
    except BrokenPipeError:
        pass
    else:
        raise AssertionError("expected the send's error")
    outbox.flush()
    assert sent == ["second"]


def test_one_thread_searches_on_while_the_other_makes_a_report(monkeypatch):
    """Two search threads: a report is made without the nodes lock. While one thread's report is
    held up (its making waits for 2,000 more playouts, at most 2 s), the other goes on; made
    under the lock (as before), the other stopped at its next phase's end, a minibatch (32) at
    most later (seen failing so)."""
    held: list[tuple[int, int]] = []
    real_make = search_run.make_infos

    def make_infos(state, go, tally):
        if len(held) < 3 and 2_000 < int(state.tree.nodes["n"][0]) < 20_000:
            before, deadline = tally.playouts, time.monotonic() + 2.0
            while tally.playouts < before + 2000 and time.monotonic() < deadline:
                time.sleep(0.001)
            held.append((before, tally.playouts))
        return real_make(state, go, tally)

    monkeypatch.setattr(search_run, "make_infos", make_infos)
    params = from_options({"Threads": 2, "MinibatchSize": 32, "SmartPruningFactor": 0.0})
    search = Search(RandomNetwork(), params)
    lines: list[int] = []
    try:
        search.set_position(chess.Board())
        result = search.run(Limit(nodes=40_000), on_info=lambda infos: lines.append(infos[0].nodes))
    finally:
        search.close()
    assert held, "no report made between 2,000 and 20,000 nodes"
    assert all(after >= before + 2000 for before, after in held), held
    assert lines == sorted(lines) and lines[-1] == result.nodes, lines[-5:]
