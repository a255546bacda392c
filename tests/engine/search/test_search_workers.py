"""The search threads (``Threads``, lc0's search threads) each have one batch in flight; a
backend gets as many of them at once as it declares (``concurrency``: backend_xla on a CPU with
two host devices runs one batch per core), the others queue in the order they came.

The test processes have one XLA host device (tests/conftest.py), so the real networks loaded
elsewhere in the suite declare concurrency 1; this covers the search's side of concurrency 2."""

from __future__ import annotations

import io
import threading
import time

import chess

from engine.backends.random import RandomNetwork
from engine.search import Limit, Search, from_options
from engine.search.core import gather as cgather
from engine.search.core import tree as ctree
from engine.search.run import SearchRun
from engine.search.threads import NodesLock
from engine.search.worker import run_gather
from tree_checks import run_settled

EVAL_SECONDS = 0.003
"""Each evaluation takes this long (the GIL released, as in XLA), so that the second batch
is gathered while the first is still being evaluated."""


class SlowNetwork(RandomNetwork):
    """The random network with a delay per call, counting the calls in flight."""

    def __init__(self, concurrency: int) -> None:
        super().__init__()
        self.concurrency = concurrency
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        self.calls = 0

    def evaluate(self, planes):
        with self._lock:
            self._in_flight += 1
            self.calls += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            time.sleep(EVAL_SECONDS)
            return super().evaluate(planes)
        finally:
            with self._lock:
                self._in_flight -= 1


NO_CLOCK = {"SmartPruningFactor": 0.0}
"""Smart pruning starts 200 ms after the first evaluation (lc0's rule): with it the tree a node
limit gives depends on the machine's speed. Without it the search depends on nothing timed."""


def _search(net: SlowNetwork, board: chess.Board, **options):
    search = Search(net, from_options(NO_CLOCK | options))
    search.set_position(board)
    result = run_settled(search, Limit(nodes=400))  # every visit backed up
    root = search.root
    return result, dict(zip((m.uci() for m in root.moves), root.cn))


def test_a_backend_gets_as_many_calls_at_once_as_it_declares():
    """Two search threads: a backend of concurrency 1 gets their calls one at a time, one of
    concurrency 2 both at once; either way the search reaches its node count with every visit
    backed up."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    for concurrency in (1, 2):
        net = SlowNetwork(concurrency=concurrency)
        result, visits = _search(net, board, Threads=2)
        assert net.max_in_flight == concurrency
        assert net.calls > 20 and result.nodes >= 400 and sum(visits.values()) >= result.nodes - 1


def test_threads_batches_are_in_flight_at_once():
    """Threads is lc0's number of search threads, each with one minibatch in flight: a backend
    that could run four calls at once gets at most Threads of them."""
    board = chess.Board()
    for threads in (1, 2, 3):
        net = SlowNetwork(concurrency=4)
        _search(net, board, Threads=threads)
        assert net.max_in_flight == threads, (threads, net.max_in_flight)


def _gather_two_without_backup(search: Search, batch_size: int) -> tuple[int, int]:
    """Gather two minibatches on the current tree, the first still in flight (its leaves
    pending) while the second is gathered, as in the loop with Threads=2; both are then
    abandoned. Returns the two batches' request counts."""
    run = SearchRun(search.resources, Limit(infinite=True))
    first, second = run.worker.prepare()
    n1, _ = run.worker.gather(first)
    n2, _ = run.worker.gather(second)
    run.worker.abandon(second)
    run.worker.abandon(first)
    search.state.changed()  # the root's view read anew (a run's loop does it at each step)
    return n1, n2


def test_a_batch_gathered_while_another_is_in_flight_is_full():
    """lc0's GatherMinibatch keeps picking while collision visits are left: a pass that only
    collides with the batch in flight moves the next pass elsewhere (the collisions stay in
    flight until the gather ends), so in a big tree the second batch is as full as the first.
    (It stopped at the first pass without a new leaf: 14-60 of 256.) The tree is unchanged
    after both are abandoned: no visit left in flight, and the root's
    visits add up."""
    # The tree grown by one thread (two make a different one each run: once the first batch
    # came to 238), then two batches gathered as two threads would.
    search = Search(RandomNetwork(), from_options(NO_CLOCK | {"MinibatchSize": 256, "Threads": 1}))
    search.set_position(chess.Board())
    search.run(Limit(nodes=40_000))
    search.params = from_options(NO_CLOCK | {"MinibatchSize": 256, "Threads": 2})
    tree = search.state.tree
    before = int(tree.nodes["n"][0])
    n1, n2 = _gather_two_without_backup(search, 256)
    assert n1 >= 240
    # lc0's MaxCollisionEvents (917) may end the second sooner: here after 190 new leaves and
    # 947 collision events, filled to 196 rows (the backend's padding).
    assert n2 >= 3 * 256 // 4
    assert (tree.nodes["nif"][: tree.count[0]] == 0).all()
    root = search.root  # out-of-order backups (terminals, cache hits) are real visits
    assert root.n == 1 + sum(root.cn) and root.n >= before


def _gather_one(search: Search, on_device: int) -> int:
    """Gather one minibatch on the current tree with ``on_device`` minibatches said to be on
    the network, then abandon it; returns its request count."""
    deadline = time.monotonic() + 10
    while search.resources.evaluator.on_device[0] != 0 and time.monotonic() < deadline:
        time.sleep(0.001)  # the last search's abandoned minibatches come back first
    assert search.resources.evaluator.on_device[0] == 0
    run = SearchRun(search.resources, Limit(infinite=True))
    batch = run.worker.prepare()[0]
    search.resources.evaluator.on_device[0] = on_device
    try:
        n, _ = run.worker.gather(batch)
    finally:
        search.resources.evaluator.on_device[0] = 0
    run.worker.abandon(batch)
    return n


def test_partial_minibatch_when_the_network_idles():
    """lc0's ThreadIdlingThreshold: with the network idle (Threads minus the minibatches it
    computes above the threshold) the gather hands over what its first pick found; while the
    network computes one, or at the default threshold, or with one thread, it fills the
    minibatch. Abandoning leaves the tree as it was."""
    counts = {}
    for options in ({"ThreadIdlingThreshold": 1}, {}, {"Threads": 1, "ThreadIdlingThreshold": 0}):
        # The tree grown by one thread, which never sends a partial minibatch, is the same
        # whatever the timing; the options under test apply to the two gathers only.
        grow = NO_CLOCK | {"MinibatchSize": 256, "Threads": 1}  # one thread: a repeatable tree
        search = Search(RandomNetwork(), from_options(grow))
        search.set_position(chess.Board())
        search.run(Limit(nodes=20_000))
        search.params = from_options(NO_CLOCK | {"MinibatchSize": 256} | options)
        n_before = int(search.state.tree.nodes["n"][0])
        key = tuple(sorted(options.items()))
        counts[key] = (_gather_one(search, 0), _gather_one(search, 1))
        tree = search.state.tree
        assert (tree.nodes["nif"][: tree.count[0]] == 0).all()
        assert int(tree.nodes["n"][0]) >= n_before
    idle, busy = counts[(("ThreadIdlingThreshold", 1),)]
    assert 0 < idle < busy and busy >= 200, counts
    assert all(i == b >= 200 for i, b in list(counts.values())[1:]), counts


def test_a_node_limit_does_not_cut_a_gather():
    """lc0's gather knows no ``go nodes`` (its VisitsStopper is asked between iterations, so a
    search ends past its limit by its last minibatches): two batches gathered as two threads
    would, with room under the limit for one minibatch and ``extra`` leaves, are both full.
    (Before, the second took what was left: 0 < leaves <= extra.)"""
    grow = NO_CLOCK | {"MinibatchSize": 256, "Threads": 1}  # one thread: a repeatable tree
    search = Search(RandomNetwork(), from_options(grow))
    search.set_position(chess.Board())
    search.run(Limit(nodes=20_000))
    search.params = from_options(NO_CLOCK | {"MinibatchSize": 256, "Threads": 2})
    tree = search.state.tree
    for extra in (40, 250):  # on the same tree: abandoned batches leave it as it was
        limit = int(tree.nodes["n"][0]) + 256 + extra
        run = SearchRun(search.resources, Limit(nodes=limit))
        leaves = []
        for batch in run.worker.prepare():
            n, _ = run.worker.gather(batch)
            leaves.append(int((batch.req["node"][:n] >= 0).sum()))  # not the prefetched rows
        assert leaves == [256, 256], (extra, leaves)
        for batch in reversed(run.worker.prepare()):
            run.worker.abandon(batch)
        assert (tree.nodes["nif"][: tree.count[0]] == 0).all()
    search.close()


def test_a_gather_after_the_tree_grew_writes_into_its_new_arrays():
    """A worker keeps each batch buffer's gather arguments from one gather to the next (only
    the collision budget changes); once the tree's arrays are replaced (it grew, or a thread
    reserved room), the next gather walks and claims the new arrays, and writes nothing into
    the old ones. Abandoned, its visits leave the new tree as it was."""
    grow = NO_CLOCK | {"MinibatchSize": 64, "Threads": 1}
    search = Search(RandomNetwork(), from_options(grow))
    search.set_position(chess.Board())
    search.state.tree = ctree.new_tree(4_096, 131_072)  # small arrays: growing them is cheap
    search.run(Limit(nodes=3_000))
    run = SearchRun(search.resources, Limit(infinite=True))
    batch = run.worker.prepare()[0]
    first = run.worker.begin_gather(batch)
    run_gather(first)
    run.worker.abandon(batch)
    old = search.state.tree
    search.state.tree = ctree.reserve(old, len(old.nodes), len(old.edges))  # new, larger arrays
    tree = search.state.tree
    assert tree.nodes is not old.nodes
    old_nodes, old_edges = old.nodes.copy(), old.edges.copy()
    second = run.worker.begin_gather(batch)
    run_gather(second)
    n = int(batch.meta[cgather.REQUESTS])
    assert (old.nodes == old_nodes).all() and (old.edges == old_edges).all()
    assert n > 0 and tree.nodes["nif"][: tree.count[0]].sum() > 0  # in flight in the new arrays
    assert second[0].tree is tree
    run.worker.abandon(batch)
    assert (tree.nodes["nif"][: tree.count[0]] == 0).all()
    search.close()


class SlowLate(RandomNetwork):
    """The random network, whose calls take 50 ms once it has evaluated 900 rows: the run's
    end finds a thread on the network."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0

    def evaluate(self, planes):
        self.rows += len(planes)
        if self.rows > 900:
            time.sleep(0.05)
        return super().evaluate(planes)


def _search_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("search-")}


def test_a_batch_on_the_network_at_the_runs_end_is_backed_up_after_it():
    """lc0's search threads finish their iteration after the bestmove: the result is the tree's
    as the run ended, which nothing changes until the search settles; then the batch left on
    the network is backed up (its visits in the tree, none in flight), and a search closed (a
    network dropped, the engine quit) has no thread left running in the network."""
    net = SlowLate()
    search = Search(net, from_options(NO_CLOCK | {"Threads": 2, "MinibatchSize": 16}))
    for _ in range(5):  # on a busy host the other thread may be off the network at the end
        search.clear()
        search.set_position(chess.Board())
        net.rows = 0
        before = _search_threads()
        result = search.run(Limit(nodes=1000), settle=False)
        left = _search_threads() - before
        late = int(sum(search.root.cnif))  # the root's children's (a path's start: not counted)
        if left and late > 0:
            break
    assert left and late > 0  # the run ended with a batch on the network: the test means something
    in_flight = search.state.tree.nodes["nif"].copy()
    time.sleep(0.1)  # its call is back meanwhile, and waits
    search.state.changed()
    assert search.root.n == result.nodes
    assert (search.state.tree.nodes["nif"][: len(in_flight)] == in_flight).all()
    search.settle()
    search.state.changed()
    assert search.root.n == result.nodes + late and not any(search.root.cnif)
    search.close()
    assert not [t for t in left if t.is_alive()]


class _Answers(io.StringIO):
    """The engine's output; at each ``bestmove`` the visits then in flight in its tree."""

    def __init__(self) -> None:
        super().__init__()
        self.uci = None
        self.in_flight: list[int] = []

    def write(self, text: str) -> int:
        if text.startswith("bestmove") and self.uci is not None:
            tree = self.uci.controller.search.state.tree
            self.in_flight.append(int(tree.nodes["nif"][: int(tree.count[0])].sum()))
        return super().write(text)


def test_the_bestmove_does_not_wait_for_a_batch_left_on_the_network():
    """Through UCI, two threads on a simulated device of 20 ms a batch: the run that ends with
    the other thread's batch on the network answers with that batch still in flight (as lc0),
    and backs it up after: the tree then holds more than the last report's nodes, every visit
    accounted for."""
    import engine.backends  # noqa: F401  (registers the random backend)
    from engine.uci import UciEngine
    from tree_checks import check_consistent

    out = _Answers()
    uci = UciEngine(out, {"Backend": "random", "BackendOptions": "delay=20", "Threads": 2,
                          "MinibatchSize": 16, "SmartPruningFactor": 0.0})  # fmt: skip
    out.uci = uci
    late = []
    for _ in range(6):  # until a run ends with a batch on the network (most do)
        uci.handle("ucinewgame")
        uci.handle("position startpos")
        uci.handle("go nodes 300")
        uci.controller.wait(30)
        reported = [ln for ln in out.getvalue().splitlines() if ln.startswith("info depth")]
        nodes = int(reported[-1].split(" nodes ")[1].split()[0])
        tree = uci.controller.search.state.tree
        check_consistent(tree)
        if int(tree.nodes["n"][0]) > nodes:  # a batch was left on the network
            late.append(out.in_flight[-1])
            break
    uci.handle("quit")
    assert late, "no run ended with a batch on the network"
    assert all(n > 0 for n in late), late  # answered before it was backed up


def test_the_nodes_lock_wakes_a_waiting_thread_at_once():
    """The search threads' nodes lock notifies only when a thread waits on it (threads.py's
    NodesLock): one waiting is counted before the lock is let go, so a wake-up reaches it long
    before its own timeout; once it is back, none is counted."""
    lock = NodesLock()
    woke = threading.Event()

    def waiter() -> None:
        with lock:
            lock.wait(5.0)
        woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with lock:
            if lock.waiting:
                lock.wake()
                break
        time.sleep(0.001)
    assert woke.wait(1.0)
    thread.join()
    assert lock.waiting == 0
