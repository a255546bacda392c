"""lc0's modes as ``xlazero MODE`` (engine/modes/): each takes lc0's flags for that mode (read
from lc0's recorded ``--help`` texts, ../shared/lc0/uci/help-MODE.txt), lists them in lc0's
layout, refuses an unknown one by name, and runs (the random backend: no network compiles)."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys

import pytest
from conftest import LC0, REPO_ROOT, SHARED

from engine import options as opts
from engine.modes import NOT_HERE, main, modes

HELP = LC0 / "uci"
FLAG_LINE = re.compile(r"^(?:  -\w,  |       )--(?:\[no-\])?([a-z0-9-]+)", re.M)


def lc0_help(mode: str) -> str:
    path = HELP / (f"help-{mode}.txt" if mode else "help.txt")
    if not path.exists():
        pytest.skip(f"../shared is absent here: {path} not found")
    return path.read_text()


def lc0_entries(text: str) -> dict[str, list[str]]:
    """lc0's help as flag -> its lines (the flag's line, the help, the bracket line)."""
    entries: dict[str, list[str]] = {}
    for block in text.split("\n\n"):
        m = FLAG_LINE.match(block)
        if m:
            entries[m.group(1)] = block.strip("\n").splitlines()
    return entries


MODES = {m.name: m for m in modes()}
LISTED_DIFFERENT = {name for d in opts.LC0_DIFFERENCES for name in d.names}
"""Options whose type or default differs from lc0's on purpose (the README's table)."""


@pytest.mark.parametrize("name", sorted(MODES))
def test_every_lc0_flag_of_the_mode_is_taken_or_refused_with_a_reason(name, capsys):
    """A mode's ``--help`` lists every flag of lc0's recorded help for that mode, each with
    lc0's name, short letter, range or type, except those it names as not supported here and
    why; its own flags (not engine options) have lc0's defaults too."""
    mode = MODES[name]
    assert main([name, "--help"]) == 0
    ours = lc0_entries(capsys.readouterr().out)
    theirs = {f: lines for f, lines in lc0_entries(lc0_help(name)).items() if f != "show-hidden"}
    missing = set(theirs) - set(ours) - set(mode.unsupported)
    assert not missing, f"expected lc0's flags of {name} taken or listed unsupported: {missing}"
    for flag, lines in theirs.items():
        if flag not in ours:
            continue
        option = mode.by_name()[flag].option
        if option is not None and option.name in LISTED_DIFFERENT:
            continue
        assert ours[flag][0] == lines[0], f"--{flag}: expected lc0's {lines[0]!r}"
        if option is None:  # the mode's own flag: lc0's bracket line (defaults, bounds)
            assert ours[flag][-1] == lines[-1] or "[" not in lines[-1], (flag, ours[flag])
    assert set(mode.unsupported) <= set(theirs), "expected only lc0's flags listed unsupported"


@pytest.mark.parametrize("name", sorted(MODES))
def test_an_unknown_flag_is_named_with_the_flags_expected(name, capsys):
    assert main([name, "--no-such-flag=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown flag --no-such-flag" in err and f"mode {name}" in err
    assert f"--{MODES[name].flags[0].name}" in err, err


def test_a_modes_own_flags_parse_as_the_engines_options_do():
    """One parser for values (engine.options.Option.parse): a mode's own flag takes what an
    option of its kind takes (booleans as on/yes/1, integers within lc0's bounds), and a bad
    value names the flag and what it expected."""
    from engine.modes.flags import ModeError

    bench, backendbench = MODES["benchmark"], MODES["backendbench"]
    assert bench.parse(["--nodes=100"])["nodes"] == 100
    assert backendbench.parse(["--header-only-once=on"])["header-only-once"] is True
    assert backendbench.parse(["--header-only-once", "no"])["header-only-once"] is False
    with pytest.raises(ModeError, match=r"^flag --nodes: expected a value in \[-1, 999999999\], got -2$"):
        bench.parse(["--nodes=-2"])
    with pytest.raises(ModeError, match="^flag --batches: expected an integer, got 'many'$"):
        backendbench.parse(["--batches=many"])
    with pytest.raises(ModeError, match="^flag --threads: option Threads: expected a value in"):
        bench.parse(["--threads=0"])  # an engine option's flag, with the benchmark's bounds


def test_an_unsupported_lc0_flag_says_why(capsys):
    assert main(["leela2onnx", "--hlo-text-output=x.hlo"]) == 2
    err = capsys.readouterr().err
    assert "--hlo-text-output" in err and "not supported here" in err and "bin/onnx2hlo" in err


def test_a_bad_value_names_the_flag_and_its_bounds(capsys):
    assert main(["bench", "--num-positions=35"]) == 2
    assert "--num-positions" in capsys.readouterr().err


def test_the_modes_are_lc0s_own():
    """Every mode lc0's ``--help`` lists is here or says why not."""
    text = lc0_help("benchmark")
    listed = re.findall(r"^  (\S+) +\S", text.split("Available modes")[1].split("Allowed")[0], re.M)
    listed = [m for m in listed if m != "A"]
    here = set(MODES) | set(NOT_HERE) | {"classic"}
    assert listed and set(listed) <= here, set(listed) - here


def test_bench_searches_lc0s_positions_and_totals(capsys):
    code = main(["bench", "--backend=random", "--nodes=30", "--movetime=-1", "--num-positions=2",
                 "--threads=1", "--minibatch-size=4"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Position: 1/2 rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1" in out
    assert "Position: 2/2 r3k2r/p1ppqpb1/" in out and "Position: 3/" not in out
    assert len(re.findall(r"^bestmove \S+$", out, re.M)) == 2
    assert re.search(r"^Benchmark time \d+ ms, \d+ nodes, \d+ nps, move \S+$", out, re.M)
    # Each search ends with the iteration that reaches its 30 nodes (lc0's): a minibatch of 4
    # and its out-of-order backups past it at most.
    total = re.search(r"^Nodes searched  : (\d+)$", out, re.M)
    assert total and 60 <= int(total[1]) <= 60 + 2 * (4 + 9), out[-300:]


def test_bench_with_a_fen_searches_that_position(capsys):
    fen = "8/8/8/8/8/5k2/8/4K2R w K - 0 1"
    assert main(["bench", "--backend=random", f"--fen={fen}", "--nodes=10", "--threads=1"]) == 0
    out = capsys.readouterr().out
    assert f"Position: 1/1 {fen}" in out and "Nodes searched  : 10" in out


def test_backendbench_prints_lc0s_csv(capsys):
    code = main(["backendbench", "--backend=random", "--batches=4", "--start-batch-size=2",
                 "--max-batch-size=6", "--batch-step=2", "-t", "1"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].startswith("size, mean nps, mean ms,") and out.count(out[0]) == 1
    assert [int(line.split(",")[0]) for line in out[1:]] == [2, 4, 6]
    assert all(len(line.split(",")) == 10 for line in out[1:])


def test_onnx2leela_embeds_the_onnx_file_as_lc0_does(tmp_path, capsys):
    """The shipped ONNX network as an lc0 file: lc0's NETWORK_ONNX with the named nodes, and
    the model byte for byte, which describenet reads back."""
    import backend_xla.lc0.description  # noqa: F401  (the package's describe() stays a function)
    from backend_xla.lc0 import read_weights

    src = REPO_ROOT / "nets" / opts.DEFAULT_NETWORK_FILE
    out = tmp_path / "net.pb.gz"
    assert main(["onnx2leela", f"--input={src}", f"--output={out}", "--onnx-input=/input/planes",
                 "--onnx-output-policy=/output/policy", "--onnx-output-wdl=/output/wdl"]) == 0
    weights = read_weights(out)
    assert weights.format.name("network") == "NETWORK_ONNX"
    assert weights.format.name("output") == "OUTPUT_WDL"
    assert weights.net.onnx_model.model == src.read_bytes()
    assert weights.net.onnx_model.output_wdl == "/output/wdl"
    capsys.readouterr()
    assert main(["describenet", "-w", str(out)]) == 0
    assert "weights: none (embedded ONNX model)" in capsys.readouterr().out


def test_onnx2leela_refuses_a_missing_node(tmp_path, capsys):
    src = REPO_ROOT / "nets" / opts.DEFAULT_NETWORK_FILE
    assert main(["onnx2leela", f"--input={src}", f"--output={tmp_path / 'x.pb.gz'}",
                 "--onnx-input=/input/planes", "--onnx-output-policy=/output/nothing",
                 "--onnx-output-wdl=/output/wdl"]) == 1
    assert "/output/nothing" in capsys.readouterr().err and not (tmp_path / "x.pb.gz").exists()


def test_onnx2leela_writes_lc0s_bytes(tmp_path):
    """Against lc0's own onnx2leela on the same file, where lc0 runs here."""
    lc0 = SHARED / "tools" / "bin" / "lc0"
    if not lc0.exists():
        pytest.skip(f"lc0 is absent here: {lc0} not found")
    src = REPO_ROOT / "nets" / opts.DEFAULT_NETWORK_FILE
    flags = [f"--input={src}", "--onnx-input=/input/planes", "--onnx-output-policy=/output/policy",
             "--onnx-output-wdl=/output/wdl"]
    subprocess.run([str(lc0), "onnx2leela", *flags, f"--output={tmp_path / 'lc0.pb.gz'}"],
                   capture_output=True, timeout=120, check=True)
    assert main(["onnx2leela", *flags, f"--output={tmp_path / 'ours.pb.gz'}"]) == 0
    theirs, ours = (gzip.open(tmp_path / f"{n}.pb.gz").read() for n in ("lc0", "ours"))
    assert ours == theirs


def test_the_program_dispatches_modes_and_the_engine(tmp_path):
    """``bin/xlazero MODE``: a mode; a mode of lc0's not here says why; no mode: the engine."""
    xlazero = str(REPO_ROOT / "bin" / "xlazero")
    run = subprocess.run([xlazero, "describenet", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0 and "-w,  --weights=STRING" in run.stdout, run.stderr
    run = subprocess.run([xlazero, "selfplay"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "selfplay is not here" in run.stderr
    run = subprocess.run([xlazero, "classic", "--backend=random"], input="uci\nquit\n",
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "uciok" in run.stdout, run.stderr
    run = subprocess.run([xlazero, "--help"], capture_output=True, text=True, timeout=120)
    assert "backendbench Quick benchmark of backend only" in run.stdout and "--weights" in run.stdout


def test_the_tools_in_bin_run_the_modes(tmp_path):
    """bin/leela2onnx is the mode: lc0's flags, lc0's errors."""
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    run = subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "leela2onnx"), "--onnx2pytorch"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--onnx2pytorch of lc0's leela2onnx is not supported" in run.stderr


def test_the_engine_help_lists_lc0s_flags_as_lc0():
    """``xlazero --help``: every flag of lc0's own ``--help`` (its engine mode), with lc0's flag
    line (short letter, name, range or type), except the options the README lists as different."""
    from engine.modes import engine_help

    ours = lc0_entries(engine_help())
    theirs = lc0_entries(lc0_help(""))
    by_flag = {o.flag: o.name for o in opts.OPTIONS}
    missing = {f for f in set(theirs) - set(ours)
               if not any(_names_flag(d.names, f) for d in opts.LC0_DIFFERENCES)}
    assert not missing, f"expected lc0's engine flags in xlazero --help: {missing}"
    for flag, lines in theirs.items():
        if flag in ours and by_flag.get(flag) not in LISTED_DIFFERENT:
            assert ours[flag][0] == lines[0], f"--{flag}: expected lc0's {lines[0]!r}"
    assert "[UCI: ConfigFile  DEFAULT: lc0.config]" in ours["config"][-1]


def _names_flag(names: tuple[str, ...], flag: str) -> bool:
    """Whether an LC0_DIFFERENCES row covers lc0's ``--flag`` (an option absent here)."""
    lc0_flags = {"HistoryFill": "history-fill", "NodesPerSecondLimit": "nps-limit"}
    return any(lc0_flags.get(n) == flag for n in names)


def test_leela2onnx_names_the_nodes_as_told(tmp_path):
    """lc0's --input-planes-name and head names: the graph's inputs and outputs so named, every
    edge renamed (and lc0's own file named the same, where lc0 runs here)."""
    import onnx

    from conftest import need_shared

    src = need_shared("maia", "maia-1100.pb.gz")
    flags = [f"--input={src}", "--input-planes-name=/in", "--policy-head-name=/pol",
             "--wdl-head-name=/w"]
    assert main(["leela2onnx", *flags, f"--output={tmp_path / 'ours.onnx'}"]) == 0
    ours = onnx.load(tmp_path / "ours.onnx").graph
    assert [i.name for i in ours.input] == ["/in"]
    assert [o.name for o in ours.output] == ["/pol", "/w"]
    edges = {x for n in ours.node for x in (*n.input, *n.output)}
    assert "/in" in edges and not edges & {"/input/planes", "/output/policy", "/output/wdl"}
    lc0 = SHARED / "tools" / "bin" / "lc0"
    if lc0.exists():
        subprocess.run([str(lc0), "leela2onnx", *flags, f"--output={tmp_path / 'lc0.onnx'}"],
                       capture_output=True, timeout=120, check=True)
        theirs = onnx.load(tmp_path / "lc0.onnx").graph
        assert [(v.name) for v in (*theirs.input, *theirs.output)] == \
            [(v.name) for v in (*ours.input, *ours.output)]
