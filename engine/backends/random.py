"""lc0's ``--backend=random``: instant, deterministic pseudo-random network outputs.

The outputs of a position depend only on its input planes (a hash of them picks a window of a
fixed table of random logits, and a random W/D/L), so the same position always gets the same
policy and value, as with a real network. For tests, for exercising search and UCI without
JAX, and for measuring the search's own cost: a batch costs about a microsecond a row
(compiled, without the GIL), so nearly all the time a search spends with this network is the
search's.

Options (lc0's ``--backend-opts`` syntax, ``--backend-opts=delay=2.5,seed=7``), as lc0's random
backend takes them:

- ``delay``: milliseconds each batch takes (a number >= 0; default 0): a simulated accelerator
  that answers any batch in ``delay`` ms, through UCI as well as in ``bin/perf/bench``. The
  evaluating thread computes the outputs, then waits for the one simulated device: the batches
  take turns for their ``delay`` ms of it, as on one GPU stream, so no number of threads
  calling at once passes one batch every ``delay`` ms (a lone call takes the delay). The
  outputs are the same with any delay.
- ``seed``: an integer >= 0 (default 0) mixed into every position's hash: another seed, another
  (equally deterministic) network.
- ``lc0``: 1 for lc0's own outputs, bit for bit (default 0): its hash of the packed planes
  (``HashCat`` of each plane's mask and value), its uniform q, its d and its logits in [0, 3],
  so that a search here and ``lc0 --backend=random`` (same ``seed``) see the same network (a
  batch costs its rows, so the search prefetches as lc0's) and, with lc0's
  ``--task-workers=0``, can be compared visit for visit (``bin/check/fidelity``).
  Flatter than the default's logits (lc0's largest prior is at most e^3 times its smallest).

Any other key raises :class:`engine.backend.OptionError` naming it and the allowed keys.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numba import njit

from engine.backend import (
    ANY_CALLS,
    INPUT_PLANES,
    POLICY_SIZE,
    BackendAttributes,
    NetworkOutput,
    OptionError,
    gathered,
    read_options,
    register_backend,
)
from engine.backends import random_lc0

ACCELERATOR_MINIBATCH = 256
"""The minibatch suggested with a ``delay`` (a simulated accelerator), as the XLA backend on a GPU."""
RANDOM_POLICY_SCALE = 2.0
"""Standard deviation of the random policy logits (lc0's random backend uses a similar spread)."""

TABLE_SIZE = 1 << 16
"""Random logits a position's policy is a window of; and the number of random (W, D, L)."""

_SEED = 20261125

_rng = np.random.default_rng(_SEED)
_LOGITS = _rng.normal(0.0, RANDOM_POLICY_SCALE, TABLE_SIZE + POLICY_SIZE).astype(np.float32)
_WDL = _rng.dirichlet((1.0, 1.0, 1.0), TABLE_SIZE).astype(np.float32)
_HASH_WORDS = np.random.default_rng(_SEED).integers(0, 2**63, 2 * INPUT_PLANES, np.uint64) * 2 + 1
"""One word a 64-bit mask of set squares and one a plane's first value, for each plane."""
_SEED_WORD = 0x9E3779B97F4A7C15
"""Odd multiplier spreading the ``seed`` option over the hash's 64 bits (seed 0: hash 0 start)."""


@dataclass(frozen=True)
class Option:
    """One of this backend's options: a number >= 0."""

    name: str
    default: float | int
    help: str
    kind: type[float] | type[int]
    aliases: tuple[str, ...] = ()

    most: float = math.inf

    def read(self, raw: str) -> float | int:
        allowed = "a number of milliseconds >= 0" if self.kind is float else "an integer >= 0"
        if self.most != math.inf:
            allowed = f"an integer from 0 to {self.most:g}"
        try:
            value = self.kind(raw)
        except ValueError:
            value = -1
        if value < 0 or value > self.most or not math.isfinite(value):
            raise OptionError(f"backend option {self.name}: expected {allowed}, got {raw!r}")
        return value


OPTIONS = (
    Option(
        "delay",
        0.0,
        "milliseconds each batch takes (the thread sleeps, as waiting for a device)",
        float,
    ),
    Option(
        "seed",
        0,
        "an integer mixed into every position's hash (another seed, another network)",
        int,
    ),
    Option(
        "lc0",
        0,
        "1: lc0's random backend's own outputs, bit for bit (its hash of the planes)",
        int,
        most=1,
    ),
)
"""The backend options this backend takes (lc0's random backend's), with their help."""


@njit(cache=True, nogil=True)
def _evaluate(bits, hash_words, seed_word, logits, wdl, policy, q, d):
    """bits uint32 [N, 112, 8, 8]: the planes' float32 bit patterns. Each position's hash is
    the dot product (mod 2**64) of random odd words with, for each plane, the 64-bit mask of
    its set squares (bit 8 * rank + 7 - file: numpy's packbits order read as little-endian
    words) and the bit pattern of its first value (lc0's planes are 0/1 except the constant
    ones, such as rule50): exact integer arithmetic, so a position hashes alike in any batch.
    The sum starts at ``seed_word`` (0 for seed 0). The hash picks a window of ``logits`` for
    the policy and a row of ``wdl``."""
    n, planes = bits.shape[0], bits.shape[1]
    flat = bits.reshape(n, planes, 64)
    for r in range(n):
        h = seed_word
        for p in range(planes):
            mask = np.uint64(0)
            row = flat[r, p]
            for s in range(64):  # branch-free: the compiler vectorises it
                set_ = np.uint64((row[s] & np.uint32(0x7FFFFFFF)) != 0)
                mask |= set_ << np.uint64((s & 56) | (7 - (s & 7)))
            h += mask * hash_words[p]
            h += np.uint64(row[0]) * hash_words[planes + p]
        _outputs_of_hash(h, logits, wdl, r, policy, q, d)


@njit(cache=True, nogil=True)
def _outputs_of_hash(h, logits, wdl, r, policy, q, d):
    """Row ``r`` of the outputs from its position's hash ``h``: a window of ``logits`` for
    the policy and a row of ``wdl``."""
    h ^= h >> np.uint64(29)
    start = np.int64(h % np.uint64(TABLE_SIZE))
    for i in range(policy.shape[1]):  # a plain loop: numba's slice assignment copies it twice
        policy[r, i] = logits[start + i]
    _value_of_hash(h, wdl, r, q, d)


@njit(cache=True, nogil=True, inline="always")
def _value_of_hash(h, wdl, r, q, d):
    """Row ``r``'s q and d from its position's (mixed) hash ``h``: a row of ``wdl``."""
    row = (h >> np.uint64(32)) % np.uint64(TABLE_SIZE)
    q[r] = wdl[row, 0] - wdl[row, 2]
    d[r] = wdl[row, 1]


@njit(cache=True, nogil=True, inline="always")
def _packed_hash(masks, value_bits, r, hash_words, seed_word):
    """Row ``r``'s position hash from its packed planes, as :func:`_evaluate` hashes the
    expanded ones (see :func:`_evaluate_packed`)."""
    h = seed_word
    planes = masks.shape[1]
    for p in range(planes):
        mask, bits = masks[r, p], value_bits[r, p]
        if bits & np.uint32(0x7FFFFFFF) == 0:
            mask = np.uint64(0)
        h += _reverse_bytes_bits(mask) * hash_words[p]
        h += (np.uint64(bits) if mask & np.uint64(1) else np.uint64(0)) * hash_words[planes + p]
    return h


def _device_rows(n: int) -> int:
    """Rows a simulated accelerator's call costs: its minibatch, whatever ``n`` (the delay is
    the same for any batch)."""
    return max(n, ACCELERATOR_MINIBATCH)


@njit(cache=True, nogil=True)
def _evaluate_packed(masks, value_bits, hash_words, seed_word, logits, wdl, policy, q, d):
    """:func:`_evaluate` of packed planes (masks uint64 [N, 112] with bit 8 * rank + file;
    value_bits uint32 [N, 112], the values' float32 bit patterns): the same hash. A plane's
    mask there has each byte's bits reversed (bit 8 * rank + 7 - file), is empty when its
    value is zero, and its first value is the value on a1, if any."""
    for r in range(masks.shape[0]):
        h = _packed_hash(masks, value_bits, r, hash_words, seed_word)
        _outputs_of_hash(h, logits, wdl, r, policy, q, d)


@njit(cache=True, nogil=True)
def _evaluate_packed_gathered(masks, value_bits, hash_words, seed_word, logits, wdl, legal, policy,
                              q, d):  # fmt: skip
    """:func:`_evaluate_packed` answering only ``legal``'s indices (int32 [N, K]) into ``policy``
    [N, K], as lc0's random backend computes a policy value only when asked for it: the same
    logits as the full policy's at those indices (an index outside 0..1857 reads the nearest
    end, as :func:`engine.backend.gathered`)."""
    last = logits.shape[0] - TABLE_SIZE - 1  # the policy's last index
    for r in range(masks.shape[0]):
        h = _packed_hash(masks, value_bits, r, hash_words, seed_word)
        h ^= h >> np.uint64(29)
        start = np.int64(h % np.uint64(TABLE_SIZE))
        for j in range(legal.shape[1]):
            index = legal[r, j]
            policy[r, j] = logits[start + (0 if index < 0 else (last if index > last else index))]
        _value_of_hash(h, wdl, r, q, d)


@njit(cache=True, nogil=True)
def _reverse_bytes_bits(x):
    """``x`` with the bits of each byte in reverse order (files a <-> h of a bitboard)."""
    x = ((x >> np.uint64(1)) & np.uint64(0x5555555555555555)) | (
        (x & np.uint64(0x5555555555555555)) << np.uint64(1)
    )
    x = ((x >> np.uint64(2)) & np.uint64(0x3333333333333333)) | (
        (x & np.uint64(0x3333333333333333)) << np.uint64(2)
    )
    return ((x >> np.uint64(4)) & np.uint64(0x0F0F0F0F0F0F0F0F)) | (
        (x & np.uint64(0x0F0F0F0F0F0F0F0F)) << np.uint64(4)
    )


class _Device:
    """The one simulated device of a ``delay``: each call has it for ``delay_s`` in turn, from
    when the call began or the previous call's turn ended, whichever is later."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self._lock = threading.Lock()
        self._free_at = 0.0

    def run(self, called_at: float) -> None:
        """The turn of a call made at ``called_at`` (time.perf_counter()): returns when it ends."""
        if self.delay_s <= 0:
            return
        with self._lock:
            begin = max(called_at, self._free_at)
            end = self._free_at = begin + self.delay_s
        time.sleep(max(0.0, end - time.perf_counter()))


class RandomNetwork:
    """A Network whose outputs are a pure function of the input planes; has WDL, no moves-left head."""

    input_format = 1
    has_wdl = True
    has_mlh = False
    max_batch = 1024
    preferred_batch = 7  # as lc0's CPU backends: the search then behaves as with a real CPU network
    concurrency = ANY_CALLS  # thread-safe; the delay's device model takes turns itself

    def __init__(
        self, name: str = "random", delay_ms: float = 0.0, seed: int = 0, lc0: bool = False
    ) -> None:
        self.name = name
        self.delay_ms = float(delay_ms)
        self.seed = int(seed)
        self.lc0 = bool(lc0)
        self._device = _Device(self.delay_ms / 1000.0)
        self._seed_word = np.uint64((self.seed * _SEED_WORD) % 2**64)
        # Compile (or load from numba's cache) now, not in a go; without the delay.
        RandomNetwork._outputs(self, np.zeros((1, INPUT_PLANES, 8, 8), np.float32))
        _evaluate_packed(
            np.zeros((1, INPUT_PLANES), np.uint64), np.zeros((1, INPUT_PLANES), np.uint32),
            _HASH_WORDS, self._seed_word, _LOGITS, _WDL,
            np.empty((1, POLICY_SIZE), np.float32), np.empty(1, np.float32),
            np.empty(1, np.float32),
        )  # fmt: skip
        RandomNetwork.evaluate_packed(
            self,
            np.zeros((1, INPUT_PLANES), np.uint64),
            np.zeros((1, INPUT_PLANES), np.float32),
            legal=np.zeros((1, 1), np.int32),
        )

    def attributes(self) -> BackendAttributes:
        """Without a delay, a CPU backend's (minibatch 7, batches padded to multiples of it; with
        ``lc0``, a batch costs its rows, as lc0's random backend, and the search prefetches
        as lc0's);
        with one, an accelerator's: lc0's GPU minibatch, and a batch costs ``delay`` whatever
        its rows, as if each call computed that minibatch, so the search fills the rest."""
        accelerator = self.delay_ms > 0
        # A subclass that wraps evaluate() (tests' networks) is given float planes and the
        # whole policy.
        own = type(self).evaluate is RandomNetwork.evaluate
        return BackendAttributes(
            name=self.name,
            description=self._description(),
            max_batch=self.max_batch,
            preferred_batch=ACCELERATOR_MINIBATCH if accelerator else self.preferred_batch,
            padded_size=_device_rows if accelerator else (None if self.lc0 else self.padded_size),
            concurrency=self.concurrency,
            packed_input=own,
            # As lc0's random backend, which computes a move's policy value only when asked.
            policy_gather=own and type(self).evaluate_packed is RandomNetwork.evaluate_packed,
            prepare=None,
        )

    def _description(self) -> tuple[str, ...]:
        """The options that differ from the defaults, for the load message."""
        if not self.delay_ms and not self.seed and not self.lc0:
            return ()
        outputs = ", lc0's outputs" if self.lc0 else ""
        return (f"random backend: delay {self.delay_ms:g} ms a batch, seed {self.seed}{outputs}",)

    def padded_size(self, n: int) -> int:
        """Rows a batch of ``n`` costs, as the XLA backend on a CPU (sizes that are multiples
        of the minibatch): the search then prefetches what it does with a real CPU network, so
        a search measured with this instant network costs what the engine's search costs."""
        return -(-n // self.preferred_batch) * self.preferred_batch

    def evaluate(self, planes: np.ndarray, legal: np.ndarray | None = None) -> NetworkOutput:
        """planes float32 [N, 112, 8, 8] -> policy [N, 1858] ([N, K] of ``legal``'s indices),
        q/d/m [N]; then, with the ``delay`` option, the call takes ``delay_ms`` in all (a
        simulated accelerator's batch)."""
        start = time.perf_counter()
        out = self._outputs(planes)
        if legal is not None:
            out = NetworkOutput(gathered(out.policy, legal), out.q, out.d, out.m)
        self._device.run(start)
        return out

    def evaluate_packed(
        self, masks: np.ndarray, values: np.ndarray, legal: np.ndarray | None = None
    ) -> NetworkOutput:
        """:meth:`evaluate` of lc0's packed planes (masks uint64 [N, 112], values float32
        [N, 112]): the same outputs as for the expanded planes, with the same delay."""
        start = time.perf_counter()
        n = masks.shape[0]
        heads = np.zeros((3, n), np.float32)  # q, d and m (no moves-left head: 0) at once
        q, d, m = heads
        masks = np.ascontiguousarray(masks, np.uint64)
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
        if self.lc0:
            policy = self._lc0_outputs(masks, bits, legal, q, d)
        elif legal is None:
            policy = np.empty((n, POLICY_SIZE), np.float32)
            _evaluate_packed(masks, bits, _HASH_WORDS, self._seed_word, _LOGITS, _WDL, policy, q, d)
        else:
            legal = np.ascontiguousarray(legal, np.int32)
            policy = np.empty(legal.shape, np.float32)
            _evaluate_packed_gathered(masks, bits, _HASH_WORDS, self._seed_word, _LOGITS, _WDL,
                                      legal, policy, q, d)  # fmt: skip
        self._device.run(start)
        return NetworkOutput(policy=policy, q=q, d=d, m=m)

    def _lc0_outputs(
        self, masks: np.ndarray, bits: np.ndarray, legal: np.ndarray | None, q: np.ndarray,
        d: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """lc0's own outputs (the ``lc0`` option) into q and d; returns the policy."""
        n = masks.shape[0]
        if legal is None:
            legal, policy = np.zeros((0, 1), np.int32), np.empty((n, POLICY_SIZE), np.float32)
        else:
            legal = np.ascontiguousarray(legal, np.int32)
            policy = np.empty(legal.shape, np.float32)
        random_lc0.evaluate_packed(masks, bits, np.uint64(self.seed), legal, policy, q, d)
        return policy

    def _outputs(self, planes: np.ndarray) -> NetworkOutput:
        """The outputs, without the delay."""
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        n = planes.shape[0]
        policy = np.empty((n, POLICY_SIZE), np.float32)
        q = np.empty(n, np.float32)
        d = np.empty(n, np.float32)
        if self.lc0:
            masks = np.empty((n, planes.shape[1]), np.uint64)
            bits = np.empty((n, planes.shape[1]), np.uint32)
            random_lc0.pack(planes.view(np.uint32), masks, bits)
            policy = self._lc0_outputs(masks, bits, None, q, d)
            return NetworkOutput(policy=policy, q=q, d=d, m=np.zeros(n, np.float32))
        _evaluate(planes.view(np.uint32), _HASH_WORDS, self._seed_word, _LOGITS, _WDL, policy, q, d)
        return NetworkOutput(policy=policy, q=q, d=d, m=np.zeros(n, np.float32))


def parse_options(text: str) -> Mapping[str, float | int]:
    """``delay=MS,seed=N`` -> {"delay": float, "seed": int}, defaults filled in, read-only.
    Raises OptionError for an unknown key (naming it and the allowed keys), a key given twice,
    or a bad value (naming the key and the value)."""
    return read_options(text, OPTIONS, "random")


def load(path: str, options: str) -> RandomNetwork:
    """Loader for register_backend: ignores the weights path (as lc0's random backend does);
    ``options``: see the module docstring."""
    values = parse_options(options)
    return RandomNetwork(
        delay_ms=float(values["delay"]), seed=int(values["seed"]), lc0=bool(values["lc0"])
    )


register_backend("random", load)
