"""Names for numba's machine code in ``perf``: a ``/tmp/perf-PID.map`` of the compiled functions.

``perf`` finds JIT code's symbols in ``/tmp/perf-<pid>.map`` (one line a symbol: start address,
size, name, in hex). numba's libraries know each function's address, but only when this process
compiled it (a library loaded from numba's cache keeps its machine code, not the names): so
``bin/perf/searchprofile`` compiles the search afresh into a private cache first.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def demangle(name: str) -> str:
    """``engine.search.core.gather.select`` from numba's Itanium-style symbol (the names of the
    nested namespaces), or the symbol as it is when it is not one."""
    if not name.startswith("_ZN"):
        return name
    parts, rest = [], name[3:]
    while rest and rest[0].isdigit():
        digits = re.match(r"\d+", rest)
        assert digits is not None
        size = int(digits.group())
        start = len(digits.group())
        parts.append(rest[start : start + size])
        rest = rest[start + size :]
    return ".".join(parts) or name


def compiled_symbols(prefixes: tuple[str, ...]) -> dict[int, str]:
    """Address -> name of every function in the libraries of the compiled overloads that the
    modules named ``prefix...`` hold (callees linked into a library included)."""
    from numba.core.registry import CPUDispatcher

    found: dict[int, str] = {}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith(prefixes):
            continue
        for obj in list(vars(module).values()):
            if not isinstance(obj, CPUDispatcher):
                continue
            for overload in obj.overloads.values():
                library = getattr(overload, "library", None)
                ir = getattr(library, "_final_module", None)
                if library is None or ir is None:  # loaded from numba's cache: no names kept
                    continue
                for function in ir.functions:
                    if function.is_declaration:
                        continue
                    address = library.get_pointer_to_function(function.name)
                    if address:
                        found[address] = demangle(function.name)
    return found


def write_perf_map(
    pid: int, prefixes: tuple[str, ...] = ("engine",), folder: Path = Path("/tmp")
) -> Path:
    """Write ``folder/perf-<pid>.map`` for this process's compiled functions; returns its path.
    A symbol's size runs to the next symbol's address (numba's code lies in few regions)."""
    symbols = sorted(compiled_symbols(prefixes).items())
    path = folder / f"perf-{pid}.map"
    lines = []
    for k, (address, name) in enumerate(symbols):
        size = symbols[k + 1][0] - address if k + 1 < len(symbols) else 4096
        lines.append(f"{address:x} {min(size, 1 << 20):x} {name}\n")
    path.write_text("".join(lines))
    return path
