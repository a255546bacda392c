"""``bin/check/soak networks``: corrupt networks made from real ``.pb.gz`` and ``.onnx`` files, each
loaded by one engine process (``setoption name WeightsFile`` + ``isready``, then
``go nodes 1``). A case passes if the engine either loads the network and answers a legal move,
or prints an ``info string error`` naming the file and answers ``bestmove 0000``; with no crash,
no wait over the hang limit, peak RSS under the cap and no file outside the case's folder opened
(inotify on sentinel files, which ``..`` and absolute external-data paths point at)."""

from __future__ import annotations

import ctypes
import gzip
import os
import random
import shutil
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess

from .soak_common import ROOT, Pipe, engine_command, reset_peak_rss, rss_kb, short

SHARED = ROOT.parent / "shared" / "lc0"
SOURCES = (
    ROOT / "nets" / "xlazero-sf6x64.onnx",
    ROOT / "nets" / "xlazero-sf6x64.pb.gz",
    SHARED / "zoo" / "bt-e32h2-pemap-relu-ffnswish-smolgennone-valclassical-nomlh.pb.gz",
    SHARED / "zoo" / "bt-e32h2-pemap-relu-ffnswish-smolgennone-valclassical-nomlh.onnx",
    SHARED / "maia" / "maia-1100.pb.gz",
    SHARED / "maia" / "maia-1100.onnx",
)
SENTINEL = "secret"
RESTART_EVERY = 25
"""Cases per engine process (a fresh one then, so one network's leftovers cannot pile up)."""


# ------------------------------------------------------------------------------ file watching
class Watch:
    """inotify on a few files: whether anything opened or read them since the last ``take``."""

    IN_ACCESS, IN_OPEN = 0x1, 0x20

    def __init__(self, paths: list[Path]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK)
        self.names: dict[int, str] = {}
        for p in paths:
            wd = self._libc.inotify_add_watch(
                self.fd, str(p).encode(), self.IN_ACCESS | self.IN_OPEN
            )
            if wd >= 0:
                self.names[wd] = str(p)

    def take(self) -> list[str]:
        """Paths opened or read since the last call."""
        seen = set()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            at = 0
            while at + 16 <= len(data):
                wd, _mask, _cookie, length = struct.unpack_from("iIII", data, at)
                seen.add(self.names.get(wd, "?"))
                at += 16 + length
        return sorted(seen)

    def close(self) -> None:
        os.close(self.fd)


# ------------------------------------------------------------------------------ corruptions
@dataclass
class Case:
    mutation: str
    source: str
    path: Path
    must_refuse: bool = False  # an escape attempt: loading it would mean it was read


def _flip_bits(data: bytes, rng: random.Random, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _gunzip(data: bytes) -> bytes:
    return gzip.decompress(data)


def _gzip_bomb(size_mb: int) -> bytes:
    member = gzip.compress(b"\0" * (16 << 20), 9)
    return member * max(1, size_mb // 16)


def _onnx_model(src: Path):
    import onnx

    return onnx.load(str(src), load_external_data=False)


def _save(model, path: Path) -> None:
    path.write_bytes(model.SerializeToString())


def _initializer(model, rng: random.Random):
    inits = [t for t in model.graph.initializer if t.raw_data or t.float_data]
    return rng.choice(inits) if inits else model.graph.initializer[0]


def _to_external(tensor, location: str, length: int | None = None) -> None:
    import onnx

    raw = bytes(tensor.raw_data)
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    if length is not None:
        entry = tensor.external_data.add()
        entry.key, entry.value = "length", str(length if length >= 0 else len(raw))


COMMON = ("truncate", "bitflip", "empty", "garbage", "gzip_bomb", "wrong_suffix")
ONNX_ONLY = (
    "wrong_shape", "wrong_op", "huge_dims", "drop_output", "bitflip_weights", "external_dotdot",
    "external_abs", "external_etc", "external_symlink", "external_inside", "external_sparse",
)  # fmt: skip
PB_ONLY = ("bitflip_inner", "truncate_inner", "garbage_inner")
MUTATIONS = COMMON + ONNX_ONLY + PB_ONLY


def make_case(
    rng: random.Random,
    sources: list[Path],
    folder: Path,
    outside: Path,
    bomb_mb: int,
    only: tuple[str, ...] = MUTATIONS,
) -> Case:
    """One corrupt network in ``folder`` (its own, empty); ``outside``: a sentinel file in
    another folder (the absolute-path target); ``only``: the mutations to choose from."""
    mutation = rng.choice(only)
    kind = ".onnx" if mutation in ONNX_ONLY else ".pb.gz" if mutation in PB_ONLY else ""
    src = rng.choice([p for p in sources if p.name.endswith(kind)])
    onnx_src = src.suffix == ".onnx"
    data = src.read_bytes()
    name = src.name
    path = folder / name
    refuse = False
    if mutation == "truncate":
        path.write_bytes(data[: rng.randrange(len(data))])
    elif mutation == "bitflip":
        path.write_bytes(_flip_bits(data, rng, rng.choice((1, 2, 8, 64))))
    elif mutation == "empty":
        path.write_bytes(b"")
    elif mutation == "garbage":
        head = rng.choice((b"", b"\x1f\x8b", b"\x08\x07"))
        path.write_bytes(head + rng.randbytes(rng.randrange(1, 1 << 16)))
    elif mutation == "gzip_bomb":
        path = folder / (src.name.split(".")[0] + rng.choice((".pb.gz", ".onnx")))
        path.write_bytes(_gzip_bomb(rng.choice((16, bomb_mb))))
    elif mutation == "wrong_suffix":
        path = folder / (src.name.split(".")[0] + (".pb.gz" if onnx_src else ".onnx"))
        path.write_bytes(data)
    elif mutation == "bitflip_inner":
        path.write_bytes(gzip.compress(_flip_bits(_gunzip(data), rng, rng.choice((1, 4, 32))), 1))
    elif mutation == "truncate_inner":
        inner = _gunzip(data)
        path.write_bytes(gzip.compress(inner[: rng.randrange(len(inner))], 1))
    elif mutation == "garbage_inner":
        path.write_bytes(gzip.compress(rng.randbytes(rng.randrange(1, 1 << 16)), 1))
    else:
        refuse = _mutate_onnx(mutation, _onnx_model(src), rng, path, outside, bomb_mb)
    return Case(mutation, name, path, refuse)


def _mutate_onnx(
    mutation: str, model, rng: random.Random, path: Path, outside: Path, bomb_mb: int
) -> bool:
    """Write ``model`` changed by ``mutation`` to ``path``; True if it must be refused."""
    graph = model.graph
    refuse = False
    if mutation == "wrong_shape":
        t = _initializer(model, rng)
        dims = list(t.dims) or [1]
        how = rng.choice(("drop", "add", "grow", "swap"))
        if how == "drop" and len(dims) > 1:
            dims.pop(rng.randrange(len(dims)))
        elif how == "add":
            dims.insert(rng.randrange(len(dims) + 1), rng.choice((2, 3, 7)))
        elif how == "grow":
            dims[rng.randrange(len(dims))] += rng.choice((1, 5))
        else:
            dims = dims[::-1] + [1]
        del t.dims[:]
        t.dims.extend(dims)
    elif mutation == "wrong_op":
        node = rng.choice(graph.node)
        node.op_type = rng.choice(("FooBar", "Conv", "Softmax", "Loop", "If", "", "Identity"))
        if rng.random() < 0.3:
            node.domain = "com.example.evil"
    elif mutation == "huge_dims":
        t = _initializer(model, rng)
        del t.dims[:]
        t.dims.extend(rng.choice(([1 << 31, 1 << 31], [1 << 62], [-1, 7], [0], [1 << 20] * 4)))
        if rng.random() < 0.5 and graph.input:
            for d in graph.input[0].type.tensor_type.shape.dim:
                d.dim_value = 1 << 40
    elif mutation == "drop_output":
        del graph.output[rng.randrange(len(graph.output))]
    elif mutation == "bitflip_weights":
        t = _initializer(model, rng)
        if t.raw_data:
            t.raw_data = _flip_bits(t.raw_data, rng, rng.choice((1, 16)))
    elif mutation.startswith("external_"):
        refuse = _external(mutation, model, rng, path, outside, bomb_mb)
    _save(model, path)
    return refuse


def _external(
    mutation: str, model, rng: random.Random, path: Path, outside: Path, bomb_mb: int
) -> bool:
    inits = [t for t in model.graph.initializer if t.raw_data]
    t = rng.choice(inits)
    raw = bytes(t.raw_data)
    if mutation == "external_dotdot":
        _to_external(
            t, rng.choice(("../" + SENTINEL, "sub/../../" + SENTINEL)), rng.choice((None, -1))
        )
        return True
    if mutation == "external_abs":
        _to_external(t, str(outside), rng.choice((None, -1)))
        return True
    if mutation == "external_etc":
        _to_external(t, rng.choice(("/etc/passwd", "/proc/self/environ", "/dev/zero")))
        return True
    if mutation == "external_symlink":
        (path.parent / "link.bin").symlink_to(outside)
        _to_external(t, "link.bin", -1)
        return True
    if mutation == "external_inside":  # a valid external-data file beside the model
        (path.parent / "weights.bin").write_bytes(raw)
        _to_external(t, "weights.bin", rng.choice((None, -1)))
        return False
    # external_sparse: a huge sparse file beside the model and no length (is all of it read?)
    with (path.parent / "big.bin").open("wb") as f:
        f.truncate(rng.choice((16, bomb_mb)) << 20)
    _to_external(t, "big.bin")
    return False


# ------------------------------------------------------------------------------ the engine side
@dataclass
class Limits:
    hang_s: float = 30.0
    max_rss_mb: int = 4096


class NetSoak:
    """One engine process at a time, restarted after a crash, a hang or RESTART_EVERY cases."""

    def __init__(self, engine_args: list[str], limits: Limits) -> None:
        self.engine_args, self.limits = engine_args, limits
        flags = [a.split("=", 1)[1] for a in engine_args if a.startswith("--backend=")]
        self.backend = flags[-1] if flags else "xla"
        self.pipe: Pipe | None = None
        self.cases_in_process = 0

    def engine(self) -> Pipe:
        if self.pipe is not None and (
            not self.pipe.alive() or self.cases_in_process >= RESTART_EVERY
        ):
            self.close()
        if self.pipe is None:
            self.pipe = Pipe(engine_command(self.engine_args))
            self.pipe.send("uci")
            state, _ = self.pipe.read_until(lambda ln: ln == "uciok", 120)
            # The first isready of a process warms up the compiled search (up to a minute when
            # numba's cache is cold): done here, on the random backend, not inside a case.
            self.pipe.send("setoption name Backend value random", "isready")
            if state == "ok":
                state, _ = self.pipe.read_until(lambda ln: ln == "readyok", 300)
            self.pipe.send(f"setoption name Backend value {self.backend}")
            if state != "ok":
                raise RuntimeError(f"engine did not start ({state})")
            self.cases_in_process = 0
        self.cases_in_process += 1
        return self.pipe

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.quit(timeout=5)
            self.pipe = None

    def check(self, case: Case, watch: Watch) -> dict[str, Any]:
        pipe = self.engine()
        watch.take()
        reset_peak_rss(pipe.pid)
        fields: dict[str, Any] = {"mutation": case.mutation, "source": case.source}
        t0 = time.monotonic()
        pipe.send(f"setoption name WeightsFile value {case.path}", "isready")
        state, lines = pipe.read_until(lambda ln: ln == "readyok", self.limits.hang_s)
        fields["load_s"] = round(time.monotonic() - t0, 2)
        if state == "ok":
            pipe.send("position startpos", "go nodes 1")
            state, lines = pipe.read_until(
                lambda ln: ln.startswith("bestmove"), self.limits.hang_s, lines
            )
        peak_mb = rss_kb(pipe.pid, "VmHWM") // 1024
        fields["peak_rss_mb"] = peak_mb
        opened = watch.take()
        fields["outcome"] = self._judge(case, state, lines, peak_mb, opened, fields)
        if fields["outcome"] in ("crash", "hang"):
            fields["tail"] = [short(ln, 200) for ln in lines[-5:]]
            if self.pipe is not None:
                self.pipe.kill()
            self.pipe = None
        return fields

    def _judge(
        self,
        case: Case,
        state: str,
        lines: list[str],
        peak_mb: int,
        opened: list[str],
        fields: dict[str, Any],
    ) -> str:
        if state == "eof":
            return "crash"
        if state == "timeout":
            return "hang"
        if opened:
            fields["opened"] = opened
            return "read_outside"
        if peak_mb > self.limits.max_rss_mb:
            return "memory"
        loaded = any(ln.startswith("info string loaded network") for ln in lines)
        errors = [ln for ln in lines if ln.startswith("info string error")]
        best = lines[-1].split()[1] if len(lines[-1].split()) > 1 else ""
        if loaded:
            fields["loaded"] = True
            if case.must_refuse:
                return "escape_loaded"
            legal = {m.uci() for m in chess.Board().legal_moves}
            return "ok_loaded" if best in legal else "bad_bestmove"
        fields["error"] = short(errors[0], 400) if errors else None
        if not errors or not any(str(case.path) in ln or case.path.name in ln for ln in errors):
            return "unclear_error"
        return "ok_refused" if best == "0000" else "bad_bestmove"


def run_networks(
    args: Any, log_case: Callable[[Callable[[int], dict[str, Any]]], bool], workdir: Path
) -> bool:
    """Make and check each case (``log_case`` runs the ones the log lacks)."""
    sources = [p for p in SOURCES if p.is_file()]
    if not sources:
        raise SystemExit("soak networks: none of the source networks exists: " + str(SOURCES))
    only = tuple(m for m in args.mutations.split(",") if m) or MUTATIONS
    unknown = set(only) - set(MUTATIONS)
    if unknown:
        raise SystemExit(f"soak networks: unknown mutations {sorted(unknown)}; known: {MUTATIONS}")
    outside_dir = workdir / "outside"
    outside_dir.mkdir(parents=True, exist_ok=True)
    cases_dir = workdir / "cases"
    cases_dir.mkdir(exist_ok=True)
    sentinels = [cases_dir / SENTINEL, outside_dir / SENTINEL]  # ../secret of a case folder
    for s in sentinels:
        s.write_bytes(b"SECRET " * 1000)
    watch = Watch(sentinels)
    soak = NetSoak(args.engine_args, Limits(args.hang_s, args.max_rss_mb))

    def one(index: int) -> dict[str, Any]:
        rng = random.Random(f"{args.seed}:{index}")
        folder = cases_dir / f"case-{index}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        case = make_case(rng, sources, folder, sentinels[1], args.bomb_mb, only)
        try:
            return soak.check(case, watch)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)

    try:
        return log_case(one)
    finally:
        soak.close()
        watch.close()
