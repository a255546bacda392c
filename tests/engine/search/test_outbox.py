"""engine/search/outbox.py: a run's lines, queued under the nodes lock by the threads that made
them and sent once each lets the lock go, leave in the order they were made whichever thread
sends them. Several threads queue numbered reports under one lock (as the nodes lock) and flush
without it; the sending callback takes a little time, so without the Outbox's sending lock two
flushers pop two reports in order and send them the other way round (seen failing so)."""

from __future__ import annotations

import threading
import time

from engine.search.outbox import Outbox


def test_lines_leave_in_the_order_made_whichever_thread_sends_them():
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
                outbox.put(send, made[0])
            outbox.flush()

    threads = [threading.Thread(target=search_thread) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outbox.flush()
    assert len(sent) == 1200
    assert sent == sorted(sent), [a for a, b in zip(sent, sent[1:], strict=False) if a > b][:5]


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
