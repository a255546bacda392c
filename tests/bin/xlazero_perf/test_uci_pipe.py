"""bin/xlazero_perf/uci_pipe.py, the tools' one UCI driver: an engine whose output ends fails
the wait at once, not at the reply's timeout."""

from __future__ import annotations

import sys
import time

import pytest

from xlazero_perf.uci_pipe import Engine, EngineError


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script as the engine")
def test_an_engine_whose_output_ends_before_its_exit_fails_the_wait_at_once(tmp_path):
    """A process closes its output as it exits, before it can be waited for: the end of its
    output, read while it still runs, must end the wait (it was taken for an empty line, and
    a bench with a dying lc0 waited out its 300 s timeout once in a suite run). Here the
    engine closes its output and lives on for two seconds."""
    script = tmp_path / "engine"
    script.write_text("#!/bin/sh\nexec 1>&-\necho 'no such backend' >&2\nsleep 2\nexit 1\n")
    script.chmod(0o755)
    engine = Engine([str(script)], stderr=-1, cwd=tmp_path)
    started = time.monotonic()
    engine.send("uci")
    with pytest.raises(EngineError, match="exited while we waited for 'uciok'") as raised:
        engine.read_until("uciok", timeout=10)
    assert time.monotonic() - started < 5, raised.value
    assert "no such backend" in str(raised.value)
    engine.quit()
