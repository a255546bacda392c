"""``bin/check/soak games``: one cutechess-cli game a case, alternately against Stockfish at a fixed
``UCI_Elo`` and against itself with pondering on, colours alternating, openings from the
held-out set. Counted from cutechess-cli's result line and its ``-debug`` dialogue: illegal
moves, time losses, crashes/disconnects, stalls and ``bestmove 0000``; all must be 0."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .soak_common import ENGINE, ROOT

OPENINGS = ROOT / "nets" / "matches" / "heldout-openings.epd"
CUTECHESS = ROOT.parent / "shared" / "tools" / "bin" / "cutechess-cli"
STOCKFISH = Path("/usr/games/stockfish")
RESULT = re.compile(r"Finished game \d+ \((.+) vs (.+)\): (\S+) \{(.*)\}")
ABNORMAL = {
    "illegal": ("illegal move",),
    "time_loss": ("on time",),
    "crash": ("disconnects", "crash", "terminated"),
    "stall": ("stalls", "connection"),
}


def find_tool(given: str | None, default: Path, name: str) -> str | None:
    if given:
        return given
    if default.is_file():
        return str(default)
    return shutil.which(name)


def classify(comment: str, dialogue: str, white: str = "xlazero", black: str = "xlazero") -> str:
    """The outcome of one game from its result comment and the engines' dialogue; an abnormal
    ending of the opponent (Stockfish losing on time on a loaded machine) is not a failure."""
    if "bestmove 0000" in dialogue:
        return "bestmove_0000"
    low = comment.lower()
    side = white if low.startswith("white") else black if low.startswith("black") else "xlazero"
    for outcome, words in ABNORMAL.items():
        if any(w in low for w in words):
            return outcome if side.startswith("xlazero") else "opponent_abnormal"
    return "ok"


def game_command(
    args: Any, index: int, opening: Path, pgn: Path, cutechess: str, stockfish: str | None
) -> tuple[list[str], str]:
    opponents = [o for o in args.opponents.split(",") if o]
    opponent = opponents[index % len(opponents)]
    xla = ["cmd=" + str(ENGINE), "dir=" + str(ROOT), *("arg=" + a for a in args.engine_args)]
    me = ["-engine", "name=xlazero", *xla]
    if opponent == "stockfish":
        if stockfish is None:
            raise FileNotFoundError("stockfish")
        other = ["-engine", "name=stockfish", "cmd=" + stockfish, "option.UCI_LimitStrength=true",
                 f"option.UCI_Elo={args.elo}"]  # fmt: skip
        extra: list[str] = []
    else:
        other = ["-engine", "name=xlazero2", *xla]
        extra = ["ponder"]
    pair = [me, other] if (index // len(opponents)) % 2 == 0 else [other, me]
    command = [cutechess, *pair[0], *pair[1], "-each", "proto=uci", f"tc={args.tc}", *extra,
               "-openings", f"file={opening}", "format=epd", "-games", "1", "-maxmoves", "200",
               "-pgnout", str(pgn), "-debug", "all"]  # fmt: skip
    return command, opponent


def game_timeout(tc: str) -> float:
    """Wall limit of one game's cutechess-cli: far above what its clocks allow."""
    base, _, inc = tc.partition("+")
    return 60.0 + 3 * (float(base.split("/")[-1]) + 200 * float(inc or 0)) * 2


def run_games(
    args: Any, log_case: Callable[[Callable[[int], dict[str, Any]]], bool], workdir: Path
) -> bool:
    cutechess = find_tool(args.cutechess, CUTECHESS, "cutechess-cli")
    stockfish = find_tool(args.stockfish, STOCKFISH, "stockfish")
    if cutechess is None:
        raise SystemExit("soak games: cutechess-cli not found (--cutechess PATH)")
    openings = [ln for ln in OPENINGS.read_text().splitlines() if ln.strip()]

    def one(index: int) -> dict[str, Any]:
        rng = random.Random(f"{args.seed}:{index // 2}")  # both colours of an opening
        opening = workdir / f"opening-{index}.epd"
        opening.write_text(rng.choice(openings) + "\n")
        pgn = workdir / f"game-{index}.pgn"
        command, opponent = game_command(args, index, opening, pgn, cutechess, stockfish)
        try:
            run = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                 timeout=game_timeout(args.tc), cwd=workdir)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"opponent": opponent, "outcome": "stall", "detail": "cutechess-cli timed out"}
        lines = run.stdout.splitlines()
        results = [m for m in map(RESULT.search, lines) if m]
        fields: dict[str, Any] = {"opponent": opponent, "tc": args.tc}
        if not results:
            fields["outcome"] = "no_result"
            fields["tail"] = lines[-10:] + run.stderr.splitlines()[-5:]
            return fields
        m = results[-1]
        fields.update(white=m.group(1), black=m.group(2), result=m.group(3), comment=m.group(4))
        dialogue = "\n".join(ln for ln in lines if "<" in ln and "bestmove" in ln)
        fields["plies"] = sum(1 for ln in lines if "bestmove" in ln and "<" in ln)
        fields["outcome"] = classify(m.group(4), dialogue, m.group(1), m.group(2))
        if fields["outcome"] != "ok":
            fields["pgn"] = pgn.read_text()[-2000:] if pgn.exists() else None
        return fields

    return log_case(one)
