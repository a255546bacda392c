"""Shared fixtures: the ``../shared`` ground truth produced by lc0 itself.

Tests that need it skip with a reason when it is absent (it lives beside the repository root).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import chess
import numpy as np
import pytest

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
TEST_PROCESS_DEVICES_FLAG = f"{DEVICE_COUNT_FLAG}=1"
"""Each test process gets one XLA host device (set here, before anything imports jax), as a user
would set it in ``XLA_FLAGS``. The suite already runs test processes that keep two cores busy
(two, and a third for the tests that wait on a clock: ON_THE_CLOCK), so one device each keeps
both busy; with one device per core each process would also compile the
split and second-device programs of every network it loads (about a sixth of the suite's
time). The multi-device paths are tested in child interpreters that choose their own device
count (tests/backend_xla/test_backend_devices.py, test_backend_concurrency.py,
test_backend_speed_paths.py, tests/engine/test_device_info.py). A user's own device count wins."""
if DEVICE_COUNT_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(
        filter(None, [os.environ.get("XLA_FLAGS", ""), TEST_PROCESS_DEVICES_FLAG]))

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
"""On a GPU host every test process starts a JAX client on the GPU, and by JAX's default each
takes 75 % of the GPU's memory at its start: with three processes a worker crashed in
tests/backend_xla/test_gpu.py, which passed with ``-n 0`` (issue 57). Each takes what it uses
instead (not yet run on a GPU: device-check's gpu-tests step runs the suite's way)."""

os.environ.setdefault("XLAZERO_XLA_COMPILE_CORES", "all")
"""XLA compiles with every core in view in the test processes and the engines they start
(backend_xla.runtime.COMPILE_CORES_ENV): its parallel code generation then fills a core the
other test process leaves idle. What the engine ships, one core in view, only changes speed; its
own test sets it back."""

os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
"""numpy asks the kernel for huge pages for each large array (numpy's documented default on
Linux), and a fresh huge page costs this project's virtual machines 4-6 ms of kernel time: the
test processes and the engines they start, whose speed no test measures, take small pages (the
suite's system time 18.4 -> 15.4 s here, 2026-12-02). The engine sets nothing of the kind:
a user's numpy keeps its default, and engine/search/pages.py makes pages ready of either size."""

from engine.startup import collector, configure  # noqa: E402  (after the XLA settings above)

configure()
"""The process's set-up, as the engine's (engine/startup/): numba's cache folder, which the
engines and tools the tests start inherit through the environment, numba's registries left to the
first compile, XLA's device count (the one set above: a device count already in ``XLA_FLAGS`` wins)."""

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
LC0 = SHARED / "lc0"


def run_in_child(code: str, with_devices: int, timeout: float = 300) -> str:
    """Run ``code`` in a fresh interpreter whose XLA CPU client has ``with_devices`` host
    devices (the count is fixed once jax has started, and the test processes have one), with
    the repository importable; returns its stdout, failing the test with its stderr."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"{DEVICE_COUNT_FLAG}={with_devices}"
    env["PYTHONPATH"] = str(REPO_ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def need_shared(*parts: str) -> Path:
    """Path inside ../shared/lc0, or skip the calling test when it is missing."""
    path = LC0.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared is absent here: {path} not found")
    return path


def lc0_planes(record: dict) -> np.ndarray:
    """lc0's planes of a reference record as float32 [112, 8, 8]: each of the 112 [mask, value]
    pairs sets bit i of the mask (square i, a1=0) at [i // 8, i % 8] to value."""
    masks = np.array([int(m) for m, _ in record["planes"]], dtype="<u8")
    values = np.array([v for _, v in record["planes"]], dtype=np.float32)
    bits = np.unpackbits(masks.view(np.uint8), bitorder="little").reshape(len(masks), 8, 8)
    return bits.astype(np.float32) * values[:, None, None]


def lc0_planes_batch(records: list[dict]) -> np.ndarray:
    """float32 [N, 112, 8, 8] of :func:`lc0_planes` for each record."""
    return np.stack([lc0_planes(r) for r in records])


def board_of(record: dict) -> chess.Board:
    """The board of a position record: its FEN with its moves played (history matters)."""
    board = chess.Board(record["fen"])
    for uci in record["moves"]:
        board.push_uci(uci)
    return board


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def shared_positions() -> list[dict]:
    """The 301 positions (fen + moves) of ../shared/lc0/positions.jsonl."""
    return read_jsonl(need_shared("positions.jsonl"))


@pytest.fixture(scope="session")
def maia1100_ref() -> list[dict]:
    """lc0's outputs of maia-1100 on every shared position (see ../shared/README.md)."""
    return read_jsonl(need_shared("maia", "ref-maia-1100.jsonl.gz"))


SMALL_BUCKETS = "batch_buckets=7"
"""Backend options of the real networks the tests load: the one batch size a CPU search at the
default minibatch uses (7 positions; smaller batches are padded to 7 and filled with prefetched
ones, whatever else is compiled, so the search behaves as at the defaults). The default set is
18 sizes, which a background thread would compile while the tests run, competing for the
cores."""


@functools.lru_cache(maxsize=None)
def _xla_network(path: Path, options: str):
    from backend_xla import load_network

    return load_network(str(path), options)


def xla_network(*parts: str, options: str = SMALL_BUCKETS):
    """The network at ../shared/lc0/<parts> through backend_xla, loaded once per test session
    and options (or skip when ../shared lacks it)."""
    return _xla_network(need_shared(*parts), options)


@pytest.fixture(scope="session")
def maia1900_net():
    """Maia-1900 from lc0's weight file (shared by the search fidelity and nodes-1 tests)."""
    return xla_network("maia", "maia-1900.pb.gz")


@pytest.fixture(scope="session")
def maia1100_net():
    return xla_network("maia", "maia-1100.onnx")


BATCHES_OF_16 = "batch_buckets=16,cache_dir=none,background_compile=0"
"""One batch size of 16, the minibatch of the searches that compare two forms of Maia-1100
(packed and float planes, the policy gathered or whole); a batch of 40 or 64 positions runs in
calls of 16, the last padded. No executable cache: each compile is the test's own."""


@pytest.fixture(scope="session")
def maia1100_b16():
    """Maia-1100 (ONNX) compiled for batches of 16, float planes: one compile for the
    packed-input and policy-gather tests (one SAME_PROCESS group)."""
    return xla_network("maia", "maia-1100.onnx", options=BATCHES_OF_16)


@pytest.fixture(scope="session")
def maia1100_b16_packed():
    """The same network taking packed planes (``packed_input=on``), shared as above."""
    return xla_network("maia", "maia-1100.onnx", options=BATCHES_OF_16 + ",packed_input=on")


WARM_UP_DONE = "XLAZERO_TEST_WARM_UP_DONE"
"""Environment variable naming the file that says the search's and the random backend's numba
functions are compiled."""
WARM_UP_CODE = (
    # No collections in this short-lived process: numba's compiler makes millions of objects
    # in reference cycles that each full pass traverses again (41 s of CPU with them, 37 s
    # without; about 800 MB at the peak instead of 430).
    "import gc, sys; from pathlib import Path\ngc.disable()\n"
    "from engine.startup import configure\nconfigure(host_devices=False)\n"
    "from engine.search.warmup import compile_the_rest, warm_up\n"
    "from engine.backends.random import RandomNetwork\n"
    "try:\n    warm_up(); compile_the_rest(); RandomNetwork(); Path(sys.argv[1]).write_text('ok')\n"
    "except BaseException as exc:\n    Path(sys.argv[1]).write_text(f'failed: {exc!r}'); raise\n"
)


BYTECODE_FOLDERS = ("engine", "backend_xla", "nets", "bin/xlazero_perf")
"""The project's modules that the test processes and the engines and tools they start import."""


def _write_bytecode() -> None:
    """Compile the project's modules to bytecode once (a third of a second): where
    ``PYTHONDONTWRITEBYTECODE`` is set, as on CI's machines, every test process and every
    engine a test starts would otherwise compile them from source again (the engine's
    ``--warm-up`` does the same for a user)."""
    import compileall

    for folder in BYTECODE_FOLDERS:
        compileall.compile_dir(REPO_ROOT / folder, quiet=2)


def write_rewritten_tests(config: pytest.Config, files: list[Path]) -> int:
    """Write pytest's assertion-rewritten bytecode of ``files`` where pytest's import hook looks
    for it (a private part of pytest: tests/test_private_hooks.py checks that its hook reads
    what this writes); returns how many it wrote. Each test process rewrote every test module
    (1.1 s of its 2.8 s collection, three processes): at once on a fresh clone, and every run
    where ``PYTHONDONTWRITEBYTECODE`` is set, as on CI's machines (pytest then writes none; it
    still reads what is there)."""
    from _pytest.assertion import rewrite

    state = config.stash[rewrite.assertstate_key]
    written = 0
    for fn in files:
        folder = rewrite.get_cache_dir(fn)
        pyc = folder / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is not None:
            continue
        folder.mkdir(exist_ok=True)
        source_hash, co = rewrite._rewrite_test(fn, config)
        written += bool(rewrite._write_pyc(state, co, source_hash, pyc))
    return written


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the search's numba functions once before the tests that use them: the test
    processes and the engines they start then load them from numba's cache instead of each
    compiling them (tens of seconds each on a fresh clone). With test processes (xdist), a
    child compiles them while other tests run (see ``pytest_runtest_call``); alone, now. Then
    the test modules' rewritten bytecode, once for every test process."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist test process: the main process has started it
    _write_bytecode()
    if session.config.getoption("numprocesses", None) in (None, 0):
        from engine.backends.random import RandomNetwork
        from engine.search.warmup import compile_the_rest, warm_up

        warm_up()
        compile_the_rest()  # as an engine's warm-up
        RandomNetwork()  # the random backend's compiled functions: most search tests run it
        return
    import tempfile

    done = Path(tempfile.mkdtemp(prefix="xlazero-warmup-")) / "done"
    os.environ[WARM_UP_DONE] = str(done)  # the test processes inherit it
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    subprocess.Popen([sys.executable, "-c", WARM_UP_CODE, str(done)], env=env, cwd=REPO_ROOT)
    if session.config.getoption("assertmode") == "rewrite":
        tests = REPO_ROOT / "tests"
        files = [*tests.rglob("test_*.py"), *tests.rglob("conftest.py")]
        try:
            write_rewritten_tests(session.config, files)
        except (ImportError, AttributeError, KeyError, TypeError, OSError):
            pass  # another pytest's internals: each test process rewrites as pytest does
            # (tests/test_private_hooks.py then fails, saying so)


USES_THE_SEARCH = ("tests/engine/", "tests/bin/test_", "tests/nets/test_shipped_nets.py",
                   "tests/nets/training/test_match", "tests/backend_xla/lc0/test_lc0_engine_plays",
                   "tests/backend_xla/test_packed_input.py::test_search_visits_",
                   "tests/backend_xla/test_policy_gather.py::test_the_option_tells_the_search",
                   "tests/backend_xla/test_device_calls.py::test_two_calls_on_one_device_search",
                   "tests/test_private_hooks.py::test_numbas_cache_index")
"""Tests that run the compiled search (in process or through an engine process)."""


@pytest.hookimpl(trylast=True)  # after the module's fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Between test modules, what the test process holds (JAX, numba, onnx, compiled networks:
    half a million objects and more) leaves the collector's generations, as the engine does
    once its network is loaded (the start-up's collector policy, engine/startup/collector.py):
    each full collection would otherwise traverse it again, 0.1-0.7 s each, about 55 of them a
    run. What the module left in cycles is collected first (a pass over what is not frozen yet),
    so that it is not kept."""
    if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
        collector.freeze(collect=True)


def pytest_runtest_call(item: pytest.Item) -> None:
    """A test that runs the search waits until the search's numba functions are compiled, after
    its fixtures (a network's XLA compilation overlaps the numba one)."""
    done = os.environ.get(WARM_UP_DONE)
    if done is None or not item.nodeid.startswith(USES_THE_SEARCH):
        return
    path = Path(done)
    deadline = time.monotonic() + 600
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run tests marked slow (skipped by default to keep CI short)")


def _jax_has_gpu() -> bool:
    try:
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # no jax, or no usable accelerator plugin
        return False


SLOW_FIRST = {
    # node id (or its start), seconds on a 2-core machine with a cold XLA cache
    "tests/engine/search/test_search_fidelity.py::test_fidelity_inside_games_with_tree_reuse": 15,
    "tests/nets/training/test_train.py::test_a_new_run_can_start_from_a_weight_file": 5,
    "tests/engine/search/test_search_fidelity.py::test_fidelity_on_heldout_random_positions": 13,
    "tests/engine/search/test_search_fidelity.py::test_fidelity_on_shared_positions": 8,
    "tests/engine/search/test_search_fidelity.py::test_contempt_follows_lc0s_visits": 6,
    "tests/engine/search/test_search_maia.py::test_maia1900_nodes_one_plays_lc0_onnx_top_move": 2,
    "tests/test_lint.py::test_mypy_is_clean": 9,
    "tests/nets/training/test_model_export.py": 1,
    "tests/nets/training/test_model_export.py::test_exported_files_reproduce_the_jax_model": 4,
    "tests/backend_xla/test_backend_devices.py::test_batch_sharded_equals_unsharded": 6,
    "tests/engine/test_device_info.py::test_forced_host_devices_are_listed_and_unusual_requests_warned": 6,
    "tests/backend_xla/test_backend_devices.py::test_loading_and_running_a_network_never_imports": 5,
    "tests/backend_xla/test_backend_speed_paths.py::test_startup_after_jax_left_alone": 5,
    "tests/nets/training/test_records.py::test_policy_targets_are_the_engine_moves_and_legal": 5,
    "tests/engine/encoding/test_encoding_legal_moves.py::test_random_games_": 4,
    "tests/backend_xla/test_backend_zoo.py::test_zoo_network_matches_lc0[se-b2f32-polconv-wdl-input132": 4,
    "tests/engine/search/test_search_maia.py::test_nodes_one_plays_top_policy_move_in_process": 1,
    "tests/engine/board/test_board_movegen.py::test_make_move_and_perft_depth_2": 4,  # perft's
    "tests/engine/board/test_board_movegen.py::test_perft_depth_1_and_policy": 3,  # group
    "tests/bin/test_bin_scripts.py::test_help_from_another_directory": 3,
    "tests/backend_xla/test_backend_maia.py::test_maia1100_matches_lc0_on_every_position": 3,
    "tests/engine/test_device_info.py::test_startup_names_platform_devices_type_and_batch_sizes": 2,
    "tests/backend_xla/test_backend_speed_paths.py::test_startup_configures_one_device_per_core": 2,
    "tests/nets/test_shipped_nets.py::test_startup_info_names_the_network_and_flags_an_untrained_one": 2,
    "tests/engine/test_uci_network_switch.py": 3,
    "tests/test_private_hooks.py::test_jax_cache_is_bypassed": 2,
}
"""The longest tests (measured with --durations), run first: the test processes take tests
in collection order, so a long test collected last keeps one process busy after the other has
finished. A test of a SAME_PROCESS group counts as its whole group (the group runs in one
process). Other tests keep their order after these. An entry that matches nothing only loses
its place; a new long test belongs here."""

FIRST_GROUP = "maia1900"
"""The SAME_PROCESS group that one test process takes first, whose network compiles while the
search's warm-up runs (its tests then wait for the warm-up)."""

SAME_PROCESS = {
    # node id start -> group: a group's tests run one after another in one test process
    "tests/engine/search/test_search_fidelity.py": "maia1900",  # maia1900_net: one load and
    "tests/engine/search/test_search_maia.py::test_maia1900_": "maia1900",  # compile
    "tests/nets/training/test_train.py::test_resumed_run_": "f8",  # one training-step compile,
    "tests/nets/training/test_train.py::test_a_new_run_": "f8",  # one set of loss kernels
    "tests/nets/training/test_model_export.py": "f8",  # (its module fixtures too) for filters=8
    # the test's own perft is not in the warm-up (nothing else runs it): one process
    # compiles it (about 2 s with numba's own helpers) for all the perft tests.
    "tests/engine/board/test_board_movegen.py": "perft",
    "tests/backend_xla/test_backend_exec_cache.py": "exec-cache",  # one first load (a fixture)
    # its module's Maia-1100 (no executable cache): compiled in each process that ran one of its
    # tests, three since the third process goes on after its clock tests (+2.3 s of CPU)
    "tests/backend_xla/test_backend_maia.py": "maia1100",
    # Maia-1100 packed and plain (maia1100_b16, maia1100_b16_packed), and Maia-1100 and -1900
    # for the switch: each compiled once, not once in each test process.
    "tests/backend_xla/test_packed_input.py": "packed",
    "tests/backend_xla/test_policy_gather.py": "packed",
    "tests/engine/test_uci_network_switch.py": "network-switch",
}
"""Tests that share what a process compiled (session or module fixtures, JAX's in-process
caches). Done by the scheduler below: pytest-xdist's own xdist_group marks stop working with
the node ids of pytest 9.2 (pytest-dev/pytest-xdist#1386)."""


def _expected_seconds(nodeid: str) -> float:
    return max((s for prefix, s in SLOW_FIRST.items() if nodeid.startswith(prefix)), default=0)


def same_process_group(nodeid: str) -> str | None:
    return next((g for prefix, g in SAME_PROCESS.items() if nodeid.startswith(prefix)), None)


def _order_longest_first(items: list[pytest.Item]) -> None:
    group_seconds: dict[str, float] = {}
    for item in items:
        if (group := same_process_group(item.nodeid)) is not None:
            group_seconds[group] = group_seconds.get(group, 0) + _expected_seconds(item.nodeid)
    seconds = {item.nodeid: group_seconds[g] if (g := same_process_group(item.nodeid)) is not None
               else _expected_seconds(item.nodeid) for item in items}
    # Tests that wait for the warm-up go after the others, but for the group that loads its
    # network first (Maia-1900, compiled while the warm-up runs): the other test process then
    # never waits, so both cores stay busy during the warm-up.
    waits = {item.nodeid: item.nodeid.startswith(USES_THE_SEARCH)
             and same_process_group(item.nodeid) != FIRST_GROUP for item in items}
    items.sort(key=lambda item: (waits[item.nodeid], -seconds[item.nodeid]))  # stable


ON_THE_CLOCK = (
    # node id starts; each waits 0.4-4 s (wall time less CPU time, measured)
    "tests/bin/test_treemem.py::test_probe_on_a_stand_in_engine",  # the probe's seconds
    "tests/bin/test_bench.py::test_simulated_accelerator_latency",  # 20 ms a network call
    "tests/engine/test_option_effects.py::test_time_manager_slowmover",  # movetimes and clocks
    "tests/engine/test_option_effects.py::test_move_overhead",
    "tests/engine/test_option_effects.py::test_the_budget_waits",
    "tests/engine/test_option_effects.py::test_smart_pruning_waits",
    "tests/engine/test_option_effects.py::test_ponder_is_advertised",
    "tests/engine/test_option_effects.py::test_log_live_stats",
    "tests/engine/search/test_search_workers.py::test_threads_batches_are_in_flight",  # paced
    "tests/engine/search/test_search_workers.py::test_a_backend_gets_as_many_calls_at_once",  # networks
    "tests/engine/search/test_network_faults.py::test_a_hanging_network_call",
)
"""Tests that mostly wait on a clock (a movetime, a paced network, a probe's seconds), in which
a test process leaves its core idle. With three test processes (pyproject.toml) the third takes
these first, while the other two keep both cores busy (they take them only when nothing else is
left); then it takes the next tests as the others do. It used to stop there, so that what the
others' tests load was not made a third time, but the last half minute's tests (engines started
and waited for) left a fifth of both cores idle with two processes: going on took the suite from
136 to 130 s (this 2-core host, alternated, 2026-12-02)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Each free test process takes the next test (or SAME_PROCESS group) in collection order;
    with three or more, the last takes the ON_THE_CLOCK tests first, the others those last."""
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return same_process_group(nodeid) or nodeid

        @property
        def _clock_process(self) -> str | None:
            """The ON_THE_CLOCK process (the last of three or more); None: collection order."""
            return f"gw{self.numnodes - 1}" if self.numnodes >= 3 else None

        def _assign_work_unit(self, node) -> None:
            if self._clock_process is not None:
                lane = node.gateway.id == self._clock_process
                scope = next((s for s in self.workqueue if s.startswith(ON_THE_CLOCK) == lane),
                             None)
                if scope is not None:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False  # keep the longest-first order, not by group size
    return Scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _order_longest_first(items)
    run_slow = config.getoption("--run-slow")
    gpu_items = [item for item in items if "gpu" in item.keywords]
    has_gpu = _jax_has_gpu() if gpu_items else False
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow test: run with --run-slow"))
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs a GPU visible to JAX; none here"))

