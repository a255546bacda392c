"""Every hook into a dependency's private internals takes effect on the versions pyproject.toml
pins (issue 67): each reports whether it did (engine.hooks.hooks(), the flags in its module),
and falls back to the dependency's own behaviour, quietly, where the internals differ. These
tests fail where a new version of numba, JAX, pytest or pytest-xdist leaves a hook without effect.

The hooks: numba's lowering registries deferred (engine/numba_registries.py), functions compiled
without reference counting and called at their machine code's entry point
(engine/search/core/calls.py), numba's index file found by its name (engine/search/warmup.py);
JAX's cache decision set for a compile (backend_xla/runtime.py: ``_without_jax_cache``), XLA's
threads found and pinned by /proc, its code-generation threads by their name (runtime.py), whole
executables serialized (backend_xla/exec_cache.py, asserted in
tests/backend_xla/test_backend_exec_cache.py); the test scheduler's groups and the test modules'
rewritten bytecode written once for every test process (tests/conftest.py, below)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numba
import numpy as np
from conftest import REPO_ROOT

from engine import hooks
from engine.search.core import calls

HOOK_NAMES = {
    "numba.registries_deferred",
    "numba.uncounted",
    "numba.direct_calls",
    "numba.index_named",
    "jax.jax_cache_bypass",
    "jax.xla_threads_pinned",
    "jax.xla_codegen_threads_named",
    "jax.executables_serialized",
}


def test_the_report_names_every_hook_and_none_failed():
    report = hooks.hooks()
    assert set(report) == HOOK_NAMES
    assert hooks.not_in_effect() == []
    assert report["numba.registries_deferred"] is True  # conftest set the process up


def test_numba_compiles_uncounted_and_direct_calls_reach_the_machine_code():
    def body(a):
        return a[1:].sum()  # a view: reference counting, unless off

    uncounted = numba.njit(**calls.UNCOUNTED)(body)
    counted = numba.njit(body)
    assert calls.STATUS["uncounted"] and calls.UNCOUNTED == {"_nrt": False}
    assert uncounted(np.arange(4.0)) == counted(np.arange(4.0)) == 6.0

    def ir(dispatcher) -> str:
        return dispatcher.overloads[dispatcher.signatures[0]].library.get_llvm_str()

    assert "NRT_incref" in ir(counted) and "NRT_incref" not in ir(uncounted)
    before = calls.STATUS["entry_points"]
    call = calls.direct(uncounted)
    try:
        assert call(np.arange(4.0)) == 6.0 and call(np.arange(5.0)) == 10.0
        assert calls.STATUS["entry_points"] == before + 1 and calls.STATUS["fallbacks"] == 0
        assert calls.direct_calls_took_effect() is True
    finally:
        calls.WRAPPED.pop()  # test_compiled_boundary.py reads the search's own


def test_numbas_cache_index_is_found_by_its_name():
    from engine.search import warmup

    warmup.warm_up()  # from the cache the suite's warm-up filled (conftest)
    assert warmup.cache_is_warm()
    assert warmup.INDEX_FOUND["numba_index_named"] is True
    assert hooks.hooks()["numba.index_named"] is True


def test_jax_cache_is_bypassed_and_xla_threads_pinned_and_named(monkeypatch):
    """One compile of the shipped network, outside JAX's persistent cache (so that XLA compiles,
    whatever this process read before), as the engine compiles: XLA's threads on one core."""
    import jax
    from jax._src import compilation_cache as cc

    import backend_xla
    from backend_xla import runtime

    monkeypatch.delenv(runtime.COMPILE_CORES_ENV, raising=False)
    backend = jax.devices()[0].client
    outside = cc.is_cache_used(backend)
    with runtime._without_jax_cache():
        assert runtime.HOOKS["jax_cache_bypass"] is True
        assert cc.is_cache_used(backend) is False
        net = backend_xla.load_network(
            REPO_ROOT / "nets" / "xlazero-sf6x64.onnx",
            "conv_method=lax,batch_buckets=7,cache_dir=none,background_compile=0",
        )
        net.close()
    assert cc.is_cache_used(backend) is outside
    if len(os.sched_getaffinity(0)) > 1:
        assert runtime.HOOKS["xla_threads_pinned"] is True
    assert runtime._codegen_threads() > 0  # XLA's code generation, found by its threads' name
    assert runtime.HOOKS["xla_codegen_threads_named"] is True


# ----------------------------------------------------------------- the test scheduler (xdist)


class _Node:
    def __init__(self, name: str, ran: dict[str, list[int]]) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.queue: list[int] = []
        self.ran = ran.setdefault(name, [])

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_the_scheduler_keeps_groups_in_one_process_and_clock_tests_in_the_third():
    """tests/conftest.py's scheduler subclasses pytest-xdist's LoadScopeScheduling through its
    private methods: run over a collection with three fake test processes, a SAME_PROCESS group
    runs in one process and the ON_THE_CLOCK tests in the last, before it takes any other."""
    import conftest

    config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True))
    config.getvalue = lambda name: ["3*popen"] if name == "tx" else None
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)
    assert config.option.loadscopereorder is False
    groups = {prefix: group for prefix, group in conftest.SAME_PROCESS.items()}
    collection = [f"tests/a/test_plain.py::test_{i}" for i in range(12)]
    collection += [f"{prefix}{'' if '::' in prefix else '::test_'}x{i}" for prefix in groups
                   for i in range(2)]
    collection += [f"{prefix}_{i}" for prefix in conftest.ON_THE_CLOCK[:3] for i in range(2)]
    ran: dict[str, list[int]] = {}
    nodes = [_Node(f"gw{i}", ran) for i in range(3)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    for _ in range(10 * len(collection)):  # the processes in turn, a test each
        busy = [n for n in nodes if n.queue]
        if not busy:
            break
        for node in busy:
            index = node.queue.pop(0)
            node.ran.append(index)
            scheduler.mark_test_complete(node, index)
    done = sorted(i for indices in ran.values() for i in indices)
    assert done == list(range(len(collection)))
    where = {collection[i]: name for name, indices in ran.items() for i in indices}
    for group in set(groups.values()):
        processes = {where[t] for t in collection if conftest.same_process_group(t) == group}
        assert len(processes) == 1, (group, processes)
    clock = {t for t in collection if t.startswith(conftest.ON_THE_CLOCK)}
    assert {where[t] for t in clock} == {"gw2"}
    third = [collection[i] for i in ran["gw2"]]
    assert set(third[: len(clock)]) == clock, third  # its first tests; then it takes others
    assert len(third) > len(clock), third


def test_rewritten_test_modules_written_once_are_what_pytests_import_hook_loads(request, tmp_path):
    """tests/conftest.py's write_rewritten_tests writes pytest's rewritten bytecode through its
    private assertion module: pytest's own reader takes the file, its code is the rewritten one
    (an assert's operands named ``@py_assert``), and a second call, finding it, writes none."""
    from _pytest.assertion import rewrite

    import conftest

    fn = tmp_path / "test_sample.py"
    fn.write_text("def test_x():\n    a = 1\n    assert a + 1 == 3\n")
    assert conftest.write_rewritten_tests(request.config, [fn]) == 1
    pyc = rewrite.get_cache_dir(fn) / ("test_sample" + rewrite.PYC_TAIL)
    code = rewrite._read_pyc(fn, pyc)
    assert code is not None
    test_x = next(c for c in code.co_consts if getattr(c, "co_name", None) == "test_x")
    assert any(name.startswith("@py_assert") for name in test_x.co_varnames), test_x.co_varnames
    assert conftest.write_rewritten_tests(request.config, [fn]) == 0


# ----------------------------------------------------------------- the scheduler's test ids


def _listed_ids() -> dict[str, list[str]]:
    import conftest

    return {
        "USES_THE_SEARCH": list(conftest.USES_THE_SEARCH),
        "SLOW_FIRST": list(conftest.SLOW_FIRST),
        "SAME_PROCESS": list(conftest.SAME_PROCESS),
        "ON_THE_CLOCK": list(conftest.ON_THE_CLOCK),
    }


def test_every_id_the_scheduler_lists_names_a_test(request):
    """Each node id (or start of one) in tests/conftest.py's lists names a test file that exists
    and, after its ``::``, the start of a test function defined in it; where this run collected
    that file whole (no -k, -m), the start of a collected test's id (a parametrized case's
    too). A renamed or moved test otherwise only loses its place, silently."""
    import ast

    import conftest

    config = request.config
    whole = not config.option.keyword and not config.option.markexpr
    collected = [item.nodeid for item in request.session.items]
    files = {nodeid.split("::")[0] for nodeid in collected}
    stale: list[str] = []
    for listname, ids in _listed_ids().items():
        for nodeid in ids:
            path, _, rest = nodeid.partition("::")
            file = REPO_ROOT / path
            if not path.endswith(".py"):  # a folder, or the start of files' names
                if not list(REPO_ROOT.glob(path + "*")):
                    stale.append(f"{listname}: {nodeid} (no such file or folder)")
                continue
            if not file.is_file():
                stale.append(f"{listname}: {nodeid} (no such file)")
                continue
            if rest:
                name = rest.split("[")[0]
                defined = [n.name for n in ast.walk(ast.parse(file.read_text()))
                           if isinstance(n, ast.FunctionDef | ast.ClassDef)]
                if not any(d.startswith(name) for d in defined):
                    stale.append(f"{listname}: {nodeid} (no test named so in {path})")
                    continue
            if whole and path in files and not any(c.startswith(nodeid) for c in collected):
                stale.append(f"{listname}: {nodeid} (matches no collected test)")
    assert conftest.FIRST_GROUP in set(conftest.SAME_PROCESS.values())
    assert not stale, "\n".join(stale)
