"""lc0's command-line flags for the modes (``xlazero MODE --flag=value``): a mode's own flags and
the engine options it takes, parsed as lc0's ``OptionsParser`` does and listed by ``--help`` in
lc0's layout (``  -w,  --weights=STRING``, the help wrapped at column 15, ``[UCI: …  DEFAULT: …]``).

A flag of lc0's that a mode does not support here is refused with its reason (``Mode.unsupported``);
any other unknown flag with the flags the mode knows."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import options as opts
from engine.startup.cmdline import SHORT_FLAGS

INT, FLOAT, STRING, BOOL, CHOICE = "int", "float", "string", "bool", "choice"
HELP_INDENT = 15
HELP_WIDTH = 95
"""lc0 wraps a flag's help at 80 characters after its 15-column indent."""


class ModeError(Exception):
    """A bad command line for a mode: the message names the flag and what is allowed."""


@dataclass(frozen=True)
class Flag:
    """One flag of a mode: lc0's long name, its kind, default, bounds or choices, help, short
    letter and the UCI option it sets (shown in the help as lc0 shows it)."""

    name: str
    kind: str
    default: Any
    help: str
    short: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    uci: str = ""
    option: opts.Option | None = None
    """The engine option this flag sets (its value parsed as the option parses it)."""

    def parse(self, text: str) -> Any:
        """``text`` as the flag's value, parsed as the engine's options parse theirs
        (:meth:`engine.options.Option.parse`: one parser for UCI, the command line and the
        modes); ModeError names the flag."""
        option = self.option or self.as_option()
        try:
            return option.parse(text)
        except opts.OptionError as exc:
            reason = str(exc)
            if self.option is None:  # the mode's own flag: its name once
                reason = reason.removeprefix(f"option {option.name}: ")
            raise ModeError(f"flag --{self.name}: {reason}") from None

    def as_option(self) -> opts.Option:
        """The flag as an option of the engine's table would be declared (its kind, default,
        bounds and choices), for the flags that set no engine option."""
        return opts.Option(self.name, _OPTION_KINDS[self.kind], self.default, self.help,
                           self.name, self.min, self.max, self.choices)  # fmt: skip

    def help_lines(self) -> list[str]:
        """The flag as lc0's ``--help`` lists it."""
        head = f"  -{self.short},  " if self.short else " " * 7
        if self.kind == BOOL:
            head += f"--[no-]{self.name}"
        elif self.kind in (INT, FLOAT):
            head += f"--{self.name}={_num(self, self.min)}..{_num(self, self.max)}"
        else:
            head += f"--{self.name}={'CHOICE' if self.kind == CHOICE else 'STRING'}"
        indent = " " * HELP_INDENT
        lines = [head]
        for paragraph in self.help.split("\n"):
            lines += textwrap.wrap(paragraph, HELP_WIDTH, initial_indent=indent,
                                   subsequent_indent=indent) or [indent]  # fmt: skip
        tags = [f"UCI: {self.uci}"] if self.uci else []
        if self.kind == BOOL:
            tags.append(f"DEFAULT: {'true' if self.default else 'false'}")
        elif self.kind in (INT, FLOAT):
            tags += [f"DEFAULT: {_num(self, self.default)}", f"MIN: {_num(self, self.min)}",
                     f"MAX: {_num(self, self.max)}"]  # fmt: skip
        elif self.default not in ("", None):
            tags.append(f"DEFAULT: {self.default}")
        if self.kind == CHOICE:
            tags.append(f"VALUES: {','.join(self.choices)}")
        if tags:
            lines.append(f"{indent}[{'  '.join(tags)}]")
        return lines


def _num(flag: Flag, value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" if flag.kind == FLOAT else str(int(value))


_KINDS = {
    opts.CHECK: BOOL,
    opts.SPIN: INT,
    opts.FLOAT: FLOAT,
    opts.COMBO: CHOICE,
    opts.STRING: STRING,
}
_SHORT = {long: short[1:] for short, long in SHORT_FLAGS.items()}
_OPTION_KINDS = {kind: option_kind for option_kind, kind in _KINDS.items()}


def option_flag(name: str, default: Any = None, help: str = "", **bounds: Any) -> Flag:
    """The engine option ``name`` as a mode's flag (lc0's flag, short letter and UCI name);
    ``default``, ``help`` and ``min``/``max`` where the mode declares its own, as lc0's modes do
    (the benchmark's ``--threads=1..128``, default 2)."""
    o = opts.find(name)
    low, high = bounds.get("min", o.min), bounds.get("max", o.max)
    option = o if (low, high) == (o.min, o.max) else _bounded(o, low, high)
    return Flag(o.flag, _KINDS[o.kind], o.default if default is None else default, help or o.help,
                _SHORT.get(o.flag, ""), low, high, o.choices, o.name, option)  # fmt: skip


def _bounded(o: opts.Option, low: float | None, high: float | None) -> opts.Option:
    from dataclasses import replace

    return replace(o, min=low, max=high)


@dataclass(frozen=True)
class Mode:
    """One of lc0's modes: its name and description (lc0's), flags, what it runs, and the flags
    of lc0's that it refuses here (flag name -> why)."""

    name: str
    description: str
    flags: tuple[Flag, ...]
    run: Callable[[dict[str, Any]], int]
    unsupported: dict[str, str] = field(default_factory=dict)

    def by_name(self) -> dict[str, Flag]:
        return {f.name: f for f in self.flags}

    def parse(self, argv: list[str]) -> dict[str, Any]:
        """``--name=value``, ``--name value``, ``--name``/``--no-name`` (booleans), ``-x value``
        -> {flag name: value}, every flag's default included; ModeError names a bad flag."""
        flags, shorts = self.by_name(), {f.short: f.name for f in self.flags if f.short}
        values = {f.name: f.default for f in self.flags}
        i = 0
        while i < len(argv):
            arg, i = argv[i], i + 1
            if arg.startswith("-") and not arg.startswith("--") and arg[1:2] in shorts:
                rest = arg[2:].removeprefix("=")
                arg = f"--{shorts[arg[1:2]]}" + (f"={rest}" if rest else "")
            if not arg.startswith("--"):
                raise ModeError(f"unexpected argument {arg!r} for mode {self.name}: expected "
                                "--flag=value")  # fmt: skip
            name, eq, text = arg[2:].partition("=")
            flag = flags.get(name)
            if flag is None and name.startswith("no-") and not eq:
                negated = flags.get(name[3:])
                if negated is not None and negated.kind == BOOL:
                    values[negated.name] = False
                    continue
            if flag is None:
                raise ModeError(self.unknown(name))
            if not eq:
                if flag.kind == BOOL and (i >= len(argv) or argv[i].startswith("-")):
                    values[name] = True
                    continue
                if i >= len(argv):
                    raise ModeError(f"flag --{name}: expected a value")
                text, i = argv[i], i + 1
            values[name] = flag.parse(text)
        return values

    def unknown(self, name: str) -> str:
        if name in self.unsupported:
            return f"flag --{name} of lc0's {self.name} is not supported here: {self.unsupported[name]}"
        known = ", ".join(f"--{f.name}" for f in self.flags)
        return (f"unknown flag --{name} for mode {self.name}: expected one of {known} "
                f"(xlazero {self.name} --help describes them)")  # fmt: skip

    def help(self, head: list[str]) -> str:
        """``xlazero MODE --help``: lc0's layout, after ``head`` (the usage and the modes)."""
        lines = head + ["Allowed command line flags for current mode:",
                                "  -h,  --help  Show help and exit.", ""]  # fmt: skip
        for flag in self.flags:
            lines += flag.help_lines() + [""]
        if self.unsupported:
            lines.append("lc0's flags of this mode not supported here:")
            lines += [f"  --{name}: {why}" for name, why in self.unsupported.items()]
        return "\n".join(lines)


def usage(modes: list[Mode]) -> list[str]:
    """lc0's head of every ``--help``: the usage and the modes."""
    lines = ["Usage: xlazero [<mode>] [flags...]", "",
             "Available modes. A help for a mode: xlazero <mode> --help"]  # fmt: skip
    lines += [f"  {m.name:<10} {m.description}" for m in modes]
    return lines + [""]
