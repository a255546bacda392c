"""``python -m engine``, ``bin/xlazero`` and the installed ``xlazero`` script: the process's set-up
(engine/startup/), then, as lc0's command line, one of lc0's modes when the first argument
names one (``xlazero benchmark --nodes=100``: engine/modes/), else the UCI engine, whose imports
load the compiled search (``classic``, lc0's default search, is the engine too)."""

import sys

from engine.startup import configure


def run(argv: list[str] | None = None) -> None:
    configure(clean=True)
    args = sys.argv[1:] if argv is None else argv
    from engine.modes import ENGINE_MODE, is_mode

    if is_mode(args):
        from engine.modes import main as mode_main

        code = mode_main(args)
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(code)
    if args[:1] == [ENGINE_MODE]:
        args = args[1:]
    if any(a in ("-h", "--help") for a in args):
        from engine.modes import engine_help

        print(engine_help())
        sys.exit(0)
    from engine.uci import run as uci_run

    uci_run(args)


if __name__ == "__main__":
    run()
