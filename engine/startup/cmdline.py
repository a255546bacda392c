"""The engine's command line, as lc0's: ``xlazero [--flag=value ...]``.

Every option of the table (engine/options.py) is a flag with lc0's name (``--cpuct=1.7``,
``--weights PATH``, a boolean alone or ``--no-flag``) and lc0's short letters (``-w NET``,
``-t 2``); a configuration file's flags come first (lc0's ConfigFile: ``-c FILE``,
``--config=FILE``, else ``lc0.config`` beside bin/xlazero), so that the command line's win.
The program's own flags: ``--help``, ``--warm-up``, ``--preload`` and lc0's ``--show-hidden``.

:func:`parse` reads it once, at start-up, into a :class:`CommandLine`; the UCI entry point
(engine.uci's ``main``) runs the session with its values. lc0's modes (``xlazero benchmark
...``: engine/modes/) parse their own flags, each option's as the table parses it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import options as opts

SHORT_FLAGS = {
    "-w": "weights",
    "-b": "backend",
    "-o": "backend-opts",
    "-t": "threads",
    "-l": "logfile",
    "-s": "syzygy-paths",
    "-v": "verbose-move-stats",
    "-c": "config",
}
"""lc0's short command-line flags: ``-w NET``, ``-b xla``, ``-o max_batch=64``, ``-t 2``,
``-l FILE``, ``-s PATHS``, ``-v``, ``-c FILE``."""


def parse_command_line(argv: Iterable[str]) -> dict[str, Any]:
    """``--flag=value`` / ``--flag value`` / ``--flag`` (booleans) / ``--no-flag`` -> {name: value}.

    Raises OptionError naming an unknown flag or a bad value.
    """
    values: dict[str, Any] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in SHORT_FLAGS or arg[:2] in SHORT_FLAGS and arg[2:3] == "=":
            arg = "--" + SHORT_FLAGS[arg[:2]] + arg[2:]
        if not arg.startswith("--"):
            raise opts.OptionError(
                f"unexpected argument {arg!r}: expected --option=value "
                f"(or one of lc0's short flags {', '.join(SHORT_FLAGS)})"
            )
        body = arg[2:]
        name, eq, text = body.partition("=")
        option = opts.BY_FLAG.get(name)
        if option is None and name.startswith("no-") and not eq:
            negated = opts.BY_FLAG.get(name[3:])
            if negated is not None and negated.kind == opts.CHECK:
                values[negated.name] = False
                continue
        if option is None:
            raise opts.OptionError(_unknown_flag(name))
        if not eq:
            if option.kind == opts.CHECK and (i >= len(args) or args[i].startswith("-")):
                values[option.name] = True
                continue
            if i >= len(args):
                raise opts.OptionError(f"flag --{name}: expected a value")
            text = args[i]
            i += 1
        values[option.name] = option.parse(text)
    return values


def _unknown_flag(name: str) -> str:
    """The error for ``--name``: the nearest flag, every flag, and where they are described
    (the program's own ``--help``, which works from any directory)."""
    import difflib  # here: only an error needs it

    near = difflib.get_close_matches(name, list(opts.BY_FLAG), n=1)
    guess = f" (did you mean --{near[0]}?)" if near else ""
    known = ", ".join(f"--{flag}" for flag in opts.BY_FLAG)
    return f"unknown flag --{name}{guess}: expected one of {known} (--help describes them)"


CONFIG_FOLDER = Path(__file__).resolve().parent.parent.parent / "bin"
"""Where the default ConfigFile, lc0.config, is looked for: beside bin/xlazero (lc0: beside its
binary)."""
DEFAULT_CONFIG = "<default>"


def config_file_of(argv: list[str]) -> str:
    """The configuration file ``argv`` names (lc0's ProcessConfigFlag: the last ``--config=FILE``
    or ``-c FILE``; ``--config FILE`` too here), else ``<default>``; ``""``: none."""
    name = DEFAULT_CONFIG
    for i, arg in enumerate(argv):
        if arg.startswith("--config="):
            name = arg.split("=", 1)[1]
        elif arg in ("-c", "--config") and i + 1 < len(argv):
            name = argv[i + 1]
    return name


def config_flags(argv: list[str], folder: Path | None = None) -> list[str]:
    """The flags of the configuration file ``argv`` names, as lc0's ConfigFile reads it: one
    flag a line, blank lines and ``#`` comments skipped, ``--`` added where a line has no
    leading ``-``; a line with one ``-`` is an error. ``<default>``: lc0.config in ``folder``
    (CONFIG_FOLDER), nothing if it is not there. OptionError says why a file does not read."""
    name = config_file_of(argv)
    if name == "":
        return []
    path = Path(name).expanduser()
    if name == DEFAULT_CONFIG:
        path = (folder or CONFIG_FOLDER) / opts.DEFAULT_CONFIG_FILE
        if not path.is_file():
            return []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise opts.OptionError(
            f"could not open configuration file {path}: {exc.strerror or exc}"
        ) from None
    print(f"Found configuration file: {path}", file=sys.stderr, flush=True)  # as lc0
    flags = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line if line.startswith("-") else "--" + line
        if not line.startswith("--"):
            raise opts.OptionError(
                f"only '--' arguments are supported in the configuration file {path}: {line!r}"
            )
        flags.append(line)
    return flags


def expand_config(argv: list[str], folder: Path | None = None) -> list[str]:
    """``argv`` after its configuration file's flags (lc0's order: the file's first, so the
    command line's win); ``--config``/``-c`` stay, setting ConfigFile."""
    return config_flags(argv, folder) + argv


def command_line_values(argv: list[str]) -> dict[str, Any]:
    """The option values that ``xlazero ARGS`` sets: its flags, after a ``--config`` file's;
    OptionError names a bad one."""
    return parse_command_line(expand_config(argv))


WARM_UP_FLAG = "--warm-up"
WARM_UP_HELP = (
    "make ready what the options name (compile the search's functions and the network's "
    "programs into the caches, as isready does, and the engine's Python bytecode), then exit: "
    "run once after an install or "
    "update, so that the first start a GUI makes is a warm one (a cold one compiles for tens "
    "of seconds, which a GUI may take for a hung engine)"
)
PRELOAD_FLAG, NO_PRELOAD = "--preload", "--no-preload"
PRELOAD_HELP = "Initialize backend and load net on engine startup (lc0's --preload)."
SHOW_HIDDEN_FLAG = "--show-hidden"
"""lc0's flag that adds its hidden options to --help; every option is listed here: accepted."""
PROGRAM_FLAGS = (WARM_UP_FLAG, PRELOAD_FLAG, NO_PRELOAD, SHOW_HIDDEN_FLAG)
"""The program's own flags, which set no option."""


@dataclass(frozen=True)
class CommandLine:
    """What ``xlazero ARGS`` asks for: the option values its flags (and its configuration
    file's) set, and the program's own flags."""

    values: dict[str, Any] = field(default_factory=dict)
    warm_up: bool = False
    """``--warm-up``: make ready what the options name, then exit."""
    preload: bool = False
    """``--preload``: the backend and the network loaded before the first command (lc0's)."""


def wants_help(argv: list[str]) -> bool:
    """Whether ``argv`` asks for the help (``-h``, ``--help``), whatever else it holds."""
    return any(a in ("-h", "--help") for a in argv)


def help_text() -> str:
    """``python -m engine.uci --help``: the usage, the program's flag, every option's flag."""
    return (
        "usage: xlazero [--option=value ...] [--warm-up]\n\n"
        f"{WARM_UP_FLAG}: {WARM_UP_HELP}\n\n" + opts.markdown_table()
    )


def parse(argv: list[str]) -> CommandLine:
    """``xlazero ARGS`` (the arguments after the program) as a :class:`CommandLine`;
    OptionError names a bad flag or a configuration file that does not read."""
    warm_up, preload = WARM_UP_FLAG in argv, PRELOAD_FLAG in argv
    values = command_line_values([a for a in argv if a not in PROGRAM_FLAGS])
    return CommandLine(values, warm_up, preload)
