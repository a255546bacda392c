"""lc0's options, as lc0 itself declares them, against this engine's (issue 66).

The truth is lc0's own replies recorded in ``../shared/lc0/uci/`` (lc0 v0.33.0-dev): ``uci.txt``
(its ``uci`` reply), ``uci-hidden.txt`` (the same with ``--show-hidden``) and ``help.txt`` (its
``--help``: each option's flags, and the ranges of the options that ``uci`` sends as strings).
Every lc0 option must be here with lc0's name, type, default, range or choices and flags, unless
``engine.options.LC0_DIFFERENCES`` lists it with its reason (the README's "For lc0 users"); and
every option that table lists must still differ, so the table says what is true.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

from conftest import need_shared
from engine import options as opts
from engine.startup.cmdline import SHORT_FLAGS
from engine.timemgr import parse_time_manager


@dataclass
class Declared:
    """One option as a ``uci`` reply declares it, with what lc0's ``--help`` adds."""

    name: str
    type: str
    default: str | None = None
    min: str | None = None
    max: str | None = None
    vars: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    """Command-line flags (``--weights``, ``-w``); empty where lc0 has none or it is unknown."""
    float_range: tuple[float, float] | None = None
    """Range of a number sent as a UCI string (from lc0's help: MIN, MAX)."""
    names_in_help: tuple[str, ...] = ()
    """Values lc0's help names in quotes (TimeManager's managers)."""
    extra: dict[str, str] = field(default_factory=dict)


def parse_uci_reply(lines: list[str]) -> dict[str, Declared]:
    """``option name N type T [default D] [min a max b] [var v ...]`` lines -> {N: Declared}."""
    out: dict[str, Declared] = {}
    keywords = ("name", "type", "default", "min", "max", "var")
    for line in lines:
        tokens = line.split(" ")
        if tokens[0] != "option":
            continue
        fields: dict[str, list[str]] = {}
        vars_: list[str] = []
        key = ""
        for token in tokens[1:]:
            if token in keywords and (key != "name" or token == "type"):
                key = token
                if key == "var":
                    vars_.append("")
                else:
                    fields[key] = []
                continue
            if key == "var":
                vars_[-1] = f"{vars_[-1]} {token}".strip()
            else:
                fields[key].append(token)
        name = " ".join(fields["name"])
        out[name] = Declared(
            name=name,
            type=" ".join(fields["type"]),
            default=" ".join(fields["default"]) if "default" in fields else None,
            min=" ".join(fields["min"]) if "min" in fields else None,
            max=" ".join(fields["max"]) if "max" in fields else None,
            vars=tuple(vars_),
        )
    return out


FLAG_LINE = re.compile(r"^  (?:(-\w),|   )  --(?:\[no-\])?([\w-]+)")
"""A flag's first line: ``  -w,  --weights=STRING`` or ``       --cpuct=0.00..100.00`` (a
description's lines are indented further)."""
UCI_TAG = re.compile(r"\[UCI: (\w+)(.*)\]")


def parse_help(text: str, declared: dict[str, Declared]) -> None:
    """Add lc0's flags and number ranges from its ``--help`` text to the declared options."""
    flags: tuple[str, ...] = ()
    body: list[str] = []
    for line in text.splitlines():
        match = FLAG_LINE.match(line)
        if match:
            short, long = match.groups()
            flags, body = tuple(f for f in (f"--{long}", short) if f), []
            continue
        if line.strip() == "(uci parameter)":
            flags, body = (), []
            continue
        body.append(line)
        tag = UCI_TAG.search(line)
        if not tag:
            continue
        name, rest = tag.groups()
        option = declared[name]
        option.flags = flags
        bounds = dict(re.findall(r"(MIN|MAX): (\S+)", rest))
        if option.type == "string" and bounds:
            option.float_range = (float(bounds["MIN"]), float(bounds["MAX"]))
        if name == "TimeManager":
            quoted = re.findall(r"'(\w+)'", " ".join(body))
            tail = re.findall(r"and (\w+)\. See", " ".join(b.strip() for b in body))
            option.names_in_help = tuple(quoted + tail)
        flags, body = (), []


def lc0_options() -> dict[str, Declared]:
    """Every option of lc0's ``uci --show-hidden`` reply (a superset of the plain one), with
    the flags and ranges of its ``--help``."""
    folder = need_shared("uci")
    plain = parse_uci_reply((folder / "uci.txt").read_text().splitlines())
    hidden = parse_uci_reply((folder / "uci-hidden.txt").read_text().splitlines())
    missing = sorted(set(plain) - set(hidden))
    assert not missing, f"expected the hidden reply to hold the plain one's options, missing {missing}"
    assert len(plain) >= 60 and len(hidden) > len(plain), (len(plain), len(hidden))
    parse_help((folder / "help.txt").read_text(), hidden)
    return hidden


def our_uci_reply() -> list[str]:
    from engine.uci import UciEngine

    out = io.StringIO()
    UciEngine(out).handle("uci")
    return out.getvalue().splitlines()


def _same_value(lc0: str | None, ours: str | None) -> bool:
    """Defaults: numbers compare as numbers (lc0 sends 1.745000, this engine 1.745)."""
    if lc0 == ours:
        return True
    try:
        return float(lc0 or "") == float(ours or "")
    except ValueError:
        return False


def short_flags() -> dict[str, str]:
    """This engine's short flags: ``-w`` -> ``--weights``."""
    return {short: f"--{long}" for short, long in SHORT_FLAGS.items()}


def differences(lc0: Declared, ours: Declared | None) -> list[str]:
    """What differs between lc0's declaration of an option and ours, each as 'expected … got …'."""
    if ours is None:
        return ["expected the option, got none"]
    found = []
    for what in ("type", "min", "max", "vars"):
        if getattr(lc0, what) != getattr(ours, what):
            found.append(f"{what}: expected {getattr(lc0, what)!r}, got {getattr(ours, what)!r}")
    if not _same_value(lc0.default, ours.default):
        found.append(f"default: expected {lc0.default!r}, got {ours.default!r}")
    option = opts.find(ours.name)
    if lc0.float_range is not None:
        got = (option.min, option.max)
        # lc0's help prints two decimals.
        if None in got or any(abs(a - b) > 0.006 for a, b in zip(lc0.float_range, got)):  # type: ignore[operator]
            found.append(f"range: expected {lc0.float_range}, got {got}")
    if lc0.flags:
        aliases = {flag for flag, long in short_flags().items() if long == f"--{option.flag}"}
        got_flags = {f"--{option.flag}", *aliases}
        if set(lc0.flags) != got_flags:
            found.append(f"flags: expected {sorted(lc0.flags)}, got {sorted(got_flags)}")
    for name in lc0.names_in_help:
        try:
            parse_time_manager(option.parse(name))
        except (opts.OptionError, ValueError) as exc:
            found.append(f"value {name!r} (named in lc0's help): expected accepted, got {exc}")
    return found


def test_lc0_replies_parse_as_lc0_declares_them():
    """The parser reads lc0's lines field by field (a wrong parser would pass anything)."""
    lc0 = lc0_options()
    assert lc0["CPuct"] == Declared("CPuct", "string", "1.745000", flags=("--cpuct",),
                                    float_range=(0.0, 100.0))
    assert lc0["ScoreType"].vars[-1] == "WDL_mu" and len(lc0["ScoreType"].vars) == 8
    assert (lc0["NNCacheSize"].min, lc0["NNCacheSize"].max) == ("0", "999999999")
    assert lc0["WeightsFile"].flags == ("--weights", "-w")
    assert lc0["LogFile"].default == "" and lc0["ClearTree"].type == "button"
    assert lc0["Ponder"].flags == () and lc0["UCI_RatingAdv"].float_range == (-10000, 10000)
    assert lc0["FpuValue"].flags == ("--fpu-value",)
    assert set(lc0["TimeManager"].names_in_help) == {"legacy", "smooth", "alphazero", "simple"}


def test_every_lc0_option_is_here_as_lc0_declares_it_or_listed_with_its_reason():
    lc0 = lc0_options()
    ours = parse_uci_reply(our_uci_reply())
    listed = {name: d for d in opts.LC0_DIFFERENCES for name in d.names}
    for name in listed:
        assert name in lc0, f"LC0_DIFFERENCES lists {name}, which lc0 does not declare"
    found = {name: differences(option, ours.get(name)) for name, option in lc0.items()}
    unlisted = {name: what for name, what in found.items() if what and name not in listed}
    assert not unlisted, (
        "lc0 options that differ here and are not in engine.options.LC0_DIFFERENCES "
        f"(lc0's value is the expected one): {unlisted}"
    )
    stale = sorted(name for name in listed if not found[name])
    assert not stale, f"LC0_DIFFERENCES lists options that are now as lc0's: {stale}"


def test_the_readme_quotes_the_differences_table():
    from conftest import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    assert "## For lc0 users" in readme
    assert opts.lc0_differences_markdown() in readme


# ------------------------------------------------------------------ the uci reply and the command line
STARTED_WITH = [
    "--weights=/nets/maia 1900.pb.gz",  # a string with a space
    "--backend=random",
    "--move-overhead=150",
    "--cpuct=1.7453219",  # more digits than %g keeps
    "--show-wdl",
    "--fpu-strategy=absolute",
    "-t",
    "3",
    "--time-manager=legacy(slowmover=1.2, steepness=6)",
]


def test_the_uci_reply_shows_the_command_line_and_sending_it_back_changes_nothing(tmp_path):
    """Issue 66 item 5, as lc0: the ``uci`` reply advertises the values the command line and
    its config file set as the options' defaults, and a GUI that sends every advertised
    default back (``setoption name N value D``) changes no setting and keeps the network."""
    import engine.backends  # noqa: F401  (registers the random backend, as the engine's entry
    # point does: a test process has it only where another test imported it before)
    from engine.startup.cmdline import command_line_values
    from engine.uci import UciEngine

    config = tmp_path / "lc0.config"
    config.write_text("--minibatch-size=16\nnncache=5000\n")
    out = io.StringIO()
    uci = UciEngine(out, command_line_values([f"--config={config}", *STARTED_WITH]))
    uci.handle("uci")
    reply = parse_uci_reply(out.getvalue().splitlines())
    advertised = {name: d.default for name, d in reply.items()}
    expected = {"WeightsFile": "/nets/maia 1900.pb.gz", "Backend": "random",
                "MoveOverheadMs": "150", "CPuct": "1.7453219", "UCI_ShowWDL": "true",
                "FpuStrategy": "absolute", "Threads": "3", "MinibatchSize": "16",
                "NNCacheSize": "5000", "TimeManager": "legacy(slowmover=1.2, steepness=6)",
                "ConfigFile": str(config)}
    got = {name: advertised[name] for name in expected}
    assert got == expected, f"expected the command line's values advertised, got {got}"
    untouched = {o.name for o in opts.OPTIONS} - set(expected)
    changed = {n: advertised[n] for n in untouched if (advertised[n] or "") != reply_default(n)}
    assert not changed, f"expected the table's defaults for the other options, got {changed}"

    uci.handle("isready")  # the random backend loads without a file
    network, before = uci.controller.network, dict(uci.values)
    assert network is not None
    out.truncate(0)
    out.seek(0)
    for name, option in reply.items():  # a button (ClearTree) has no value: only its press
        value = "" if option.type == "button" else f" value {option.default}"
        uci.handle(f"setoption name {name}{value}")
    assert not out.getvalue(), f"expected no answer to the echoed options, got {out.getvalue()!r}"
    changed = {n: (before[n], v) for n, v in uci.values.items() if before[n] != v}
    assert not changed, f"expected no setting changed (before, after), got {changed}"
    assert uci.controller.network is network, "expected the network kept, got it dropped"
    uci.handle("quit")


def reply_default(name: str) -> str:
    """The table's default of an option as its ``uci`` line writes it."""
    declared = parse_uci_reply([opts.find(name).uci_line()])
    return declared[name].default or ""


def test_the_engine_process_advertises_its_flags():
    """The same through the program's own entry point (the issue's example)."""
    import subprocess
    import sys

    from conftest import REPO_ROOT

    proc = subprocess.run([sys.executable, "-m", "engine.uci", "--backend=random",
                           "--weights=maia-1900.pb.gz", "--move-overhead=150"], cwd=REPO_ROOT,
                          capture_output=True, text=True, input="uci\nquit\n", timeout=60)
    lines = proc.stdout.splitlines()
    assert "option name WeightsFile type string default maia-1900.pb.gz" in lines, lines
    assert "option name MoveOverheadMs type spin default 150 min 0 max 100000000" in lines, lines
