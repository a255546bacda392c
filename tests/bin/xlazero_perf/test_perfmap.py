"""bin/xlazero_perf/perfmap.py: the perf map names a compiled function at its address."""

from __future__ import annotations

import sys
import types

from numba import njit

from xlazero_perf.perfmap import demangle, write_perf_map


def test_the_map_names_a_function_this_process_compiled(tmp_path):
    module = types.ModuleType("perfmap_probe")
    sys.modules["perfmap_probe"] = module
    try:

        @njit
        def twice(x):
            return 2 * x

        module.twice = twice
        assert twice(21) == 42
        path = write_perf_map(12345, prefixes=("perfmap_probe",), folder=tmp_path)
        entries = [line.split(maxsplit=2) for line in path.read_text().splitlines()]
        overload = next(iter(twice.overloads.values()))
        names = {int(address, 16): name for address, _size, name in entries}
        assert path.name == "perf-12345.map"
        assert names[overload.library.get_pointer_to_function(overload.fndesc.mangled_name)].endswith("twice")
        assert all(int(size, 16) > 0 for _, size, _ in entries)
    finally:
        del sys.modules["perfmap_probe"]


def test_demangle_reads_the_nested_names():
    assert demangle("_ZN6engine6search4core6gather6selectB3v61E5Tree") == "engine.search.core.gather.select"
    assert demangle("NRT_incref") == "NRT_incref"
