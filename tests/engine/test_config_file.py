"""``-c FILE``, ``--config=FILE`` and the ConfigFile option read lc0's configuration files as lc0
does (src/utils/configfile.cc): one flag a line, ``--`` optional, ``#`` comments and blank lines
skipped, the file's flags before the command line's; ``lc0.config`` beside the engine by
default; ``--config=`` reads none."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from engine import options as opts
from engine.startup.cmdline import command_line_values, config_flags, expand_config
from engine.uci import UciEngine

LC0_STYLE = """# lc0.config as an lc0 user writes it
--backend=random
  minibatch-size=16

--cpuct=2.5
# --threads=3
nncache=5000
"""


def advertised(values: dict) -> dict[str, str]:
    """The ``uci`` reply's defaults of an engine started with ``values``."""
    out = io.StringIO()
    UciEngine(out, values).handle("uci")
    reply = {}
    for line in out.getvalue().splitlines():
        if line.startswith("option name "):
            name, _, rest = line[len("option name "):].partition(" type ")
            reply[name] = rest.split(" default ", 1)[1].split(" min ")[0].split(" var ")[0] if " default " in rest else ""
    return reply


@pytest.mark.parametrize("form", ["-c", "--config=", "--config"])
def test_a_named_file_sets_the_options_and_the_uci_reply_shows_them(tmp_path, form):
    config = tmp_path / "my.config"
    config.write_text(LC0_STYLE)
    argv = [form + str(config)] if form.endswith("=") else [form, str(config)]
    values = command_line_values(argv)
    assert values["Backend"] == "random" and values["MinibatchSize"] == 16
    assert values["CPuct"] == 2.5 and values["NNCacheSize"] == 5000 and "Threads" not in values
    reply = advertised(values)
    assert reply["MinibatchSize"] == "16" and reply["CPuct"] == "2.5" and reply["NNCacheSize"] == "5000"
    assert reply["ConfigFile"] == str(config) and reply["Threads"] == "0"


def test_the_command_line_wins_over_the_file(tmp_path):
    config = tmp_path / "lc0.config"
    config.write_text(LC0_STYLE)
    values = command_line_values(["--minibatch-size=8", "-c", str(config)])
    assert values["MinibatchSize"] == 8 and values["Backend"] == "random"


def test_lc0_config_beside_the_engine_is_read_by_default(tmp_path):
    assert config_flags([], folder=tmp_path) == []  # none there: nothing, no error
    (tmp_path / "lc0.config").write_text(LC0_STYLE)
    assert config_flags([], folder=tmp_path) == ["--backend=random", "--minibatch-size=16",
                                                 "--cpuct=2.5", "--nncache=5000"]
    assert config_flags(["--config="], folder=tmp_path) == [], "expected --config= to read none"
    assert expand_config(["--cpuct=3"], folder=tmp_path)[-1] == "--cpuct=3"


def test_lc0s_file_errors(tmp_path):
    with pytest.raises(opts.OptionError, match="could not open configuration file .*missing"):
        config_flags([f"--config={tmp_path / 'missing'}"])
    bad = tmp_path / "bad.config"
    bad.write_text("-w net.pb.gz\n")
    with pytest.raises(opts.OptionError, match="only '--' arguments are supported"):
        config_flags(["-c", str(bad)])
    bad.write_text("--no-such-flag=1\n")
    with pytest.raises(opts.OptionError, match="unknown flag --no-such-flag"):
        command_line_values(["-c", str(bad)])


def test_the_engine_process_reads_lc0_config_from_a_config_flag(tmp_path):
    config = tmp_path / "lc0.config"
    config.write_text(LC0_STYLE)
    proc = subprocess.run([str(REPO_ROOT / "bin" / "xlazero"), "-c", str(config)], input="uci\nquit\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "option name MinibatchSize type spin default 16 min 0 max 1024" in proc.stdout
    assert f"option name ConfigFile type string default {config}" in proc.stdout
    assert f"Found configuration file: {config}" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "engine", "--config=" + str(tmp_path / "nope")],
                          input="quit\n", capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode == 2 and "nope" in proc.stderr


def test_lc0s_preload_and_show_hidden_flags_are_taken():
    """``--preload`` loads the network before the first command, as lc0's; ``--show-hidden``
    is accepted (every option is listed here)."""
    proc = subprocess.run([str(REPO_ROOT / "bin" / "xlazero"), "--backend=random", "--preload",
                           "--show-hidden"], input="quit\n", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "info string loaded network random" in proc.stdout, proc.stdout
