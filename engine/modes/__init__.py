"""lc0's modes: ``xlazero MODE [flags...]`` as ``lc0 MODE [flags...]`` (lc0's src/main.cc).

The first argument picks the mode, as lc0's ``CommandLine::ConsumeCommand``; anything else (no
argument, or a flag first) is the UCI engine (``classic``, lc0's default search, is the engine
too). Each mode takes lc0's flags for it (engine/modes/flags.py) and ``--help`` lists them in
lc0's layout. A mode of lc0's with no counterpart here answers with why (``NOT_HERE``).

The modes sit above the UCI engine in the import layers (pyproject.toml): they may import
engine.uci (its backends' registration) and backend_xla; nothing below imports them.
"""

from __future__ import annotations

import sys
from typing import Any

from engine.modes.flags import Mode, ModeError, usage

ENGINE_MODE = "classic"
"""lc0's default search: the UCI engine (``xlazero classic --flag=...`` = ``xlazero --flag=...``)."""

NOT_HERE: dict[str, tuple[str, str]] = {
    "selfplay": (
        "Play games with itself",
        "lc0's training-data generator (games between two of its own players written as "
        "training chunks for lc0's training pipeline); this engine makes no training data, and "
        "bin/match plays engine-against-engine matches",
    ),
    "dag-preview": (
        'Use "dag-preview" search',
        "lc0's experimental DAG search; the search here is lc0's classic one (classic)",
    ),
    "policyhead": (
        'Use "policyhead" search',
        "lc0's debugging search that plays the policy head's top move unsearched; not here "
        "(go nodes 1 plays the same move)",
    ),
    "valuehead": (
        'Use "valuehead" search',
        "lc0's debugging search that plays the move whose position the value head likes best, "
        "one evaluation a move; not here",
    ),
}
"""lc0's modes with no counterpart here: mode -> (lc0's description, why)."""


def modes() -> list[Mode]:
    """The modes here, in lc0's order (their flags built when asked: an engine start never
    builds them)."""
    from engine.modes import backendbench, benchmark, nets

    return [benchmark.mode(shorter=False), benchmark.mode(shorter=True), backendbench.mode(),
            nets.leela2onnx_mode(), nets.onnx2leela_mode(), nets.describenet_mode()]  # fmt: skip


MODE_NAMES = ("benchmark", "bench", "backendbench", "leela2onnx", "onnx2leela", "describenet")
"""The names of :func:`modes`, known without building them (the dispatch's test)."""


def is_mode(argv: list[str]) -> bool:
    """Whether ``argv`` (the arguments after the program) starts with one of lc0's modes."""
    return bool(argv) and (argv[0] in MODE_NAMES or argv[0] in NOT_HERE)


def help_modes() -> list[str]:
    """The modes as lc0's ``--help`` lists them, those not here included."""
    lines = usage(modes())[:-1]
    lines += [f"  {name:<10} {desc} (not here: xlazero {name} says why)"
              for name, (desc, _) in NOT_HERE.items()]  # fmt: skip
    lines.append(f'  {ENGINE_MODE:<10} Use "classic" search (the UCI engine, as without a mode)')
    return lines + [""]


OUTPUTS = {
    "benchmark": "lc0's output lines and totals",
    "bench": "lc0's output lines and totals",
    "backendbench": "lc0's CSV columns",
    "leela2onnx": "lc0's ONNX graph (tests/backend_xla/lc0/test_lc0_graph.py)",
    "onnx2leela": "lc0's file, byte for byte (tests/engine/test_modes.py)",
    "describenet": "lc0's format fields, then the graph as the backend runs it",
}
"""What each mode's output is, against lc0's (the README's table)."""


def lc0_modes_markdown() -> str:
    """lc0's command line against this one, as a markdown table for the README."""
    rows = [
        "| lc0 | here | lc0's flags not taken here |",
        "|---|---|---|",
        "| `lc0 [flags]` (the engine; `lc0 classic`) | `bin/xlazero [flags]` (`bin/xlazero classic`): "
        "every option's flag, `-w -b -o -t -l -s -v -c`, `--preload`, `--show-hidden`; "
        "`--warm-up` added | those of the options above that are absent |",
    ]
    for mode in modes():
        reasons: dict[str, list[str]] = {}
        for flag, why in mode.unsupported.items():
            reasons.setdefault(why, []).append(f"`--{flag}`")
        missing = "; ".join(f"{', '.join(f)}: {why}" for why, f in reasons.items()) or "none"
        rows.append(f"| `lc0 {mode.name}` | `bin/xlazero {mode.name}`: lc0's flags (`--help` "
                    f"lists them); {OUTPUTS[mode.name]} | {missing} |")  # fmt: skip
    for name, (_, why) in NOT_HERE.items():
        rows.append(f"| `lc0 {name}` | not here | {why} |")
    return "\n".join(rows)


def engine_help() -> str:
    """``xlazero --help``: lc0's layout, the modes then the engine's flags (every option's)."""
    import textwrap

    from engine import options as opts
    from engine.modes.flags import BOOL, HELP_INDENT, HELP_WIDTH, Flag, option_flag
    from engine.startup.cmdline import PRELOAD_HELP, WARM_UP_FLAG, WARM_UP_HELP

    indent = " " * HELP_INDENT
    lines = help_modes() + ["Allowed command line flags for current mode:",
                            "  -h,  --help  Show help and exit.", "", "       --show-hidden",
                            f"{indent}Show hidden options. Use with --help (all are shown here).",
                            ""]  # fmt: skip
    for o in opts.OPTIONS:
        if o.flag:  # a button (ClearTree) has none, as in lc0
            lines += option_flag(o.name).help_lines() + [""]
    lines += Flag("preload", BOOL, False, PRELOAD_HELP).help_lines() + [
        "",
        f"       {WARM_UP_FLAG}",
    ]
    lines += textwrap.wrap(WARM_UP_HELP, HELP_WIDTH, initial_indent=indent,
                           subsequent_indent=indent)  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the mode ``argv[0]`` with the flags after it; exit code 2 on a bad flag."""
    name, args = argv[0], argv[1:]
    if name in NOT_HERE:
        print(f"xlazero: lc0's mode {name} is not here: {NOT_HERE[name][1]}", file=sys.stderr)
        return 2
    mode = next(m for m in modes() if m.name == name)
    if any(a in ("-h", "--help") for a in args):
        print(mode.help(help_modes()))
        return 0
    try:
        values: dict[str, Any] = mode.parse([a for a in args if a != "--show-hidden"])
    except ModeError as exc:
        print(f"xlazero {name}: error: {exc}", file=sys.stderr)
        return 2
    try:
        return mode.run(values)
    except ModeError as exc:
        print(f"xlazero {name}: error: {exc}", file=sys.stderr)
        return 1
