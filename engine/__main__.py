"""``python -m engine`` and the installed ``xlazero`` script: the process's set-up
(engine/startup.py), then the UCI engine, whose imports load the compiled search."""

from engine.startup import configure


def run() -> None:
    configure(clean=True)
    from engine.uci import run as uci_run

    uci_run()


if __name__ == "__main__":
    run()
